// A store's configuration from a connection URL, as `psql` and most tools take it.
#if PostgreSQL

import Foundation
import OperationsDurable
import PostgresNIO

extension PostgresOperationStore.Configuration {
    /// Reads `postgres://user[:password]@host[:port][/database][?sslmode=…]` (also
    /// `postgresql://`). The port is 5432 and the user `postgres` when not given;
    /// `sslmode` is `disable` (the default), `prefer` or `require` (`verify-full` is
    /// `require` with certificate checks, which `require` also does here).
    /// - Throws: `DurableError` (`invalidArgument`) naming what is wrong with the URL; the
    ///   message leaves the password out.
    public init(url text: String, maximumConnections: Int = 8) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            ["postgres", "postgresql"].contains(scheme.lowercased())
        else {
            throw DurableError(.invalidArgument, "not a PostgreSQL URL (postgres://user@host:port/database): \(Self.redacted(text))")
        }
        guard let host = components.host, !host.isEmpty else {
            throw DurableError(.invalidArgument, "the PostgreSQL URL names no host: \(Self.redacted(text))")
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let tls: PostgresOperationStore.Configuration.TLS
        switch components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable" {
        case "disable": tls = .disable
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case let mode:
            throw DurableError(.invalidArgument, "the PostgreSQL URL's sslmode \(mode) is not one of disable, prefer, require")
        }
        self.init(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: path.isEmpty ? nil : path, tls: tls,
            maximumConnections: maximumConnections)
    }

    private static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "…"
        return components.string ?? "(a URL with a password)"
    }
}
#endif
