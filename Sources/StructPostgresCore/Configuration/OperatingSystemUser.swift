#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The user running the process, whose name libpq uses when neither the connection string nor `PGUSER` gives one.
enum OperatingSystemUser {
    /// The effective user's name from the password database (`getpwuid_r(geteuid())`, as libpq's `pg_fe_getauthname`),
    /// or `nil` when it has none (a container's arbitrary uid) or the platform has no such database.
    static func name() -> String? {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        var buffer = [CChar](repeating: 0, count: 4096)
        return buffer.withUnsafeMutableBufferPointer { buffer -> String? in
            var entry = passwd()
            var found: UnsafeMutablePointer<passwd>?
            // The entry's strings point into `buffer`: read while it is alive.
            guard let base = buffer.baseAddress, getpwuid_r(geteuid(), &entry, base, buffer.count, &found) == 0, found != nil,
                let name = entry.pw_name
            else { return nil }
            return String(cString: name)
        }
        #else
        return nil
        #endif
    }
}
