/// libpq's `sslmode`, with libpq's meanings.
public enum SSLMode: String, Sendable, CaseIterable {
    /// Plain text only.
    case disable
    /// Like `prefer` (PostgresNIO cannot try plain text first).
    case allow
    /// Encrypt when the server offers it, without verifying the certificate; fall back to plain text.
    case prefer
    /// Always encrypt; verify nothing (unless `sslrootcert` is set, which makes it `verify-ca`, as in libpq).
    case require
    /// Always encrypt and verify the certificate chain against `sslrootcert`, not the host name.
    case verifyCA = "verify-ca"
    /// Always encrypt, verify the chain and that the certificate names the host.
    case verifyFull = "verify-full"
}
