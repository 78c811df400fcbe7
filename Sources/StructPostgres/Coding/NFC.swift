import StructPostgresCore
import StructPostgresDriver

/// Unicode Normalization Form C, the form the library stores text in and binds text as.
///
/// Swift's `String` compares by canonical equivalence (`"Café"` with U+00E9 equals `"Cafe\u{301}"`), PostgreSQL
/// compares code points. With both sides composed, the two agree: every string the library writes, and every string
/// a filter binds, goes through ``normalize(_:)``.
///
/// The normalizer is the standard library's own (`String._nfcCodeUnits`), the one `String.==` compares with, not
/// Foundation's `precomposedStringWithCanonicalMapping`: on Linux (swift-corelibs-foundation, Swift 6.3) that one
/// reads some characters beyond the BMP as others (`"\u{10041}\u{301}"`, LINEAR B SYLLABLE B038 E and an acute,
/// comes back as `"Á"`), which would store another text than the one given.
enum NFC {
    /// `text` composed; text that is already in the form comes back as it is, cheaply when it is ASCII (or holds no
    /// scalar from U+0300 on): a few nanoseconds per string.
    static func normalize(_ text: String) -> String {
        if isNormalizedWithoutComposing(text) { return text }
        return String(decoding: text._nfcCodeUnits, as: UTF8.self)
    }

    /// Whether `text` is known to be composed without composing it: no scalar from U+0300 on (where combining marks
    /// and decomposable characters begin; ASCII is looked at eight bytes at a time), or the standard library's quick
    /// check (Swift 6.2 and later).
    static func isNormalizedWithoutComposing(_ text: String) -> Bool {
        if belowCombiningMarks(text) ?? text.utf8.allSatisfy({ $0 < 0xCC }) { return true }
        #if compiler(>=6.2)
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            var span = text.utf8Span
            return span.checkForNFC(quickCheck: true)
        }
        #endif
        return false
    }

    /// Whether every scalar of `text` is below U+0300 (no UTF-8 byte from 0xCC on); `nil` when its bytes are not
    /// contiguous. Below U+0300 no character decomposes or combines, so such text is composed.
    private static func belowCombiningMarks(_ text: String) -> Bool? {
        text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard let base = bytes.baseAddress.map(UnsafeRawPointer.init) else { return true }
            var index = 0
            // ASCII eight bytes at a time, the common case.
            while index + 8 <= bytes.count {
                if base.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { break }
                index += 8
            }
            while index < bytes.count {
                if bytes[index] >= 0xCC { return false }
                index += 1
            }
            return true
        }
    }
}
