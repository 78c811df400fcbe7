import Foundation

/// libpq's connection parameters for dead-peer detection (`keepalives`, `keepalives_idle`, `keepalives_interval`,
/// `keepalives_count`, `tcp_user_timeout`) and server settings (`options=-c name=value`): read from a URL or the
/// environment, checked, and written back into ``ConnectionSettings/description``.
extension ConnectionSettings {
    /// Refuses values no connection can be made with: a negative or zero keepalive timing or timeout, a malformed
    /// setting name, and server settings behind a pooler in transaction mode (it refuses or drops them).
    /// - Throws: ``StructPostgresError`` `invalidConfiguration` naming the setting.
    package func validateConnectionOptions() throws {
        func fail(_ why: String) -> StructPostgresError { StructPostgresError(.invalidConfiguration, "connection settings: \(why)") }
        if let keepalive = tcpKeepalive {
            for (name, value) in [("idle", keepalive.idle), ("interval", keepalive.interval)] {
                if let value, value <= .zero { throw fail("tcpKeepalive.\(name) \(value) is not positive; nil takes the system's value") }
            }
            if let count = keepalive.count, count <= 0 {
                throw fail("tcpKeepalive.count \(count) is not positive; nil takes the system's value")
            }
        }
        if let tcpUserTimeout, tcpUserTimeout <= .zero {
            throw fail("tcpUserTimeout \(tcpUserTimeout) is not positive; nil takes the system's value")
        }
        for name in serverSettings.keys.sorted() where !Self.isSettingName(name) {
            throw fail("server setting '\(name)' is not a setting name (letters, digits, '_' and '.')")
        }
        if let zone = serverSettings.keys.first(where: { $0.lowercased() == "timezone" }) {
            throw fail(
                "server setting '\(zone)' is the library's: sessions run in UTC, so that timestamp without time zone columns hold UTC times"
            )
        }
        if poolMode == .transaction, !serverSettings.isEmpty {
            let names = serverSettings.keys.sorted().joined(separator: ", ")
            throw fail(
                "server settings (\(names)) cannot be sent through a pooler in transaction mode (pool_mode=transaction): it refuses or drops startup parameters. Set them for the role or database instead (ALTER ROLE ... SET \(serverSettings.keys.sorted()[0]) = ...), or on the server"
            )
        }
    }

    /// Server settings from libpq's `options` string: `-c name=value`, `-cname=value` or `--name=value`, separated by
    /// spaces; a backslash keeps the next character (`\ ` a space, `\\` a backslash). `-` in a name is `_`, as the
    /// server reads it. `origin` names the string in errors (`options`, `PGOPTIONS`).
    static func serverSettings(fromOptions text: String, origin: String) throws -> [String: String] {
        func fail(_ why: String) -> StructPostgresError { StructPostgresError(.invalidConfiguration, "\(origin): \(why)") }
        var arguments: [String] = []
        var current: String?
        var escaped = false
        for character in text {
            if escaped {
                current = (current ?? "") + String(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
                current = current ?? ""
            } else if character == " " || character == "\t" || character == "\n" {
                if let argument = current { arguments.append(argument) }
                current = nil
            } else {
                current = (current ?? "") + String(character)
            }
        }
        if escaped { throw fail("ends with a lone backslash") }
        if let current { arguments.append(current) }
        var settings: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let setting: String
            if argument == "-c" {
                guard index + 1 < arguments.count else { throw fail("'-c' is not followed by name=value") }
                index += 1
                setting = arguments[index]
            } else if argument.hasPrefix("-c") {
                setting = String(argument.dropFirst(2))
            } else if argument.hasPrefix("--"), argument.count > 2 {
                setting = String(argument.dropFirst(2))
            } else {
                throw fail("'\(argument)' is not supported; give server settings as -c name=value")
            }
            guard let equals = setting.firstIndex(of: "=") else { throw fail("'\(setting)' has no '=value' (expected -c name=value)") }
            let name = setting[..<equals].replacingOccurrences(of: "-", with: "_")
            guard isSettingName(name) else { throw fail("'\(setting[..<equals])' is not a setting name (letters, digits, '_' and '.')") }
            settings[name] = String(setting[setting.index(after: equals)...])
            index += 1
        }
        return settings
    }

    /// ``serverSettings`` as libpq's `options` string, by name.
    var optionsParameter: String {
        serverSettings.sorted { $0.key < $1.key }.map { name, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: " ", with: "\\ ")
            return "-c \(name)=\(escaped)"
        }.joined(separator: " ")
    }

    /// The URL parameters of keepalive and `tcp_user_timeout` that differ from the defaults (`&keepalives=0`, ...).
    var keepaliveParameters: String {
        var parameters = ""
        let defaults = TCPKeepalive()
        if let keepalive = tcpKeepalive {
            if keepalive.idle != defaults.idle { parameters += "&keepalives_idle=\(Self.wholeSeconds(keepalive.idle))" }
            if keepalive.interval != defaults.interval { parameters += "&keepalives_interval=\(Self.wholeSeconds(keepalive.interval))" }
            if keepalive.count != defaults.count { parameters += "&keepalives_count=\(keepalive.count ?? 0)" }
        } else {
            parameters += "&keepalives=0"
        }
        if tcpUserTimeout != .seconds(25) { parameters += "&tcp_user_timeout=\(Self.milliseconds(tcpUserTimeout))" }
        return parameters
    }

    /// A duration in whole seconds, rounded up (0: none).
    package static func wholeSeconds(_ duration: Duration?) -> Int {
        guard let duration else { return 0 }
        let parts = duration.components
        return Int(parts.seconds) + (parts.attoseconds > 0 ? 1 : 0)
    }

    /// A duration in whole milliseconds, rounded up (0: none).
    package static func milliseconds(_ duration: Duration?) -> Int {
        guard let duration else { return 0 }
        let parts = duration.components
        let remainder = parts.attoseconds % 1_000_000_000_000_000
        return Int(parts.seconds) * 1000 + Int(parts.attoseconds / 1_000_000_000_000_000) + (remainder > 0 ? 1 : 0)
    }

    static func isSettingName<S: StringProtocol>(_ name: S) -> Bool {
        !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ".") }
    }
}

extension URLParts {
    /// Applies the keepalive, `tcp_user_timeout` and `options` parameters to `settings`, with libpq's meanings:
    /// `keepalives=0` switches keepalive off; a timing of 0 takes the system's value; `tcp_user_timeout` is in
    /// milliseconds. A value that is not a whole number, or is negative, is refused by name.
    func applyConnectionOptions(to settings: inout ConnectionSettings) throws {
        func number(_ value: String?, _ name: String, _ unit: String) throws -> Int? {
            guard let value else { return nil }
            guard let number = Int(value.trimmingCharacters(in: .whitespaces)), number >= 0 else {
                throw StructPostgresError(
                    .invalidConfiguration, "\(name) '\(value)' is not a whole number of \(unit) of 0 or more (0 takes the system's value)")
            }
            return number
        }
        if let keepalives {
            guard let on = Int(keepalives.trimmingCharacters(in: .whitespaces)), on >= 0 else {
                throw StructPostgresError(.invalidConfiguration, "keepalives '\(keepalives)' is not 1 (on) or 0 (off)")
            }
            settings.tcpKeepalive = on == 0 ? nil : settings.tcpKeepalive ?? TCPKeepalive()
        }
        let idle = try number(keepalivesIdle, "keepalives_idle", "seconds")
        let interval = try number(keepalivesInterval, "keepalives_interval", "seconds")
        let count = try number(keepalivesCount, "keepalives_count", "probes")
        if var keepalive = settings.tcpKeepalive {
            if let idle { keepalive.idle = idle == 0 ? nil : .seconds(idle) }
            if let interval { keepalive.interval = interval == 0 ? nil : .seconds(interval) }
            if let count { keepalive.count = count == 0 ? nil : count }
            settings.tcpKeepalive = keepalive
        }
        if let timeout = try number(tcpUserTimeout, "tcp_user_timeout", "milliseconds") {
            settings.tcpUserTimeout = timeout == 0 ? nil : .milliseconds(timeout)
        }
        if let options {
            settings.serverSettings = try ConnectionSettings.serverSettings(fromOptions: options, origin: optionsOrigin)
        }
        try settings.validateConnectionOptions()
    }
}
