import Foundation

/// Microseconds since 2000-01-01, PostgreSQL's timestamp representation. Inlinable into the module above, which
/// decodes every timestamp cell through it (see ``ResultCells`` for why the type is `@usableFromInline`).
@usableFromInline package enum TimestampCoding {
    @usableFromInline package static let epochOffset: Double = 946_684_800

    @inlinable
    package static func microseconds(_ date: Date) -> Int64 {
        guard isRepresentable(date) else { return 0 }
        return Int64(((date.timeIntervalSince1970 - epochOffset) * 1_000_000).rounded())
    }

    @inlinable
    package static func date(microseconds: Int64) -> Date {
        Date(timeIntervalSince1970: epochOffset + Double(microseconds) / 1_000_000)
    }

    /// PostgreSQL's timestamps run from 4713 BC to 294276 AD.
    @inlinable
    package static func isRepresentable(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds.isFinite && seconds >= -210_866_803_200 && seconds < 9_224_318_016_000
    }
}
