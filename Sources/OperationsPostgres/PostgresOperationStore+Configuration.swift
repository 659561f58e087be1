// A store's connection settings: where the database is, its TLS, how many connections.
#if PostgreSQL

import NIOSSL
import PostgresNIO

extension PostgresOperationStore {
    /// Where the database is, and how many connections the store may open.
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var username: String
        public var password: String?
        public var database: String?
        public var tls: TLS
        public var maximumConnections: Int

        /// TLS for every connection the store opens: its pool's, its listener's, its connection check's.
        public struct TLS: Sendable {
            enum Mode: Sendable {
                case disable
                case prefer(TLSConfiguration)
                case require(TLSConfiguration)
            }

            let mode: Mode

            /// Connections without TLS.
            public static let disable = TLS(mode: .disable)

            /// TLS when the server offers it, otherwise a connection without.
            public static func prefer(_ configuration: TLSConfiguration) -> TLS { TLS(mode: .prefer(configuration)) }

            /// TLS or no connection.
            public static func require(_ configuration: TLSConfiguration) -> TLS { TLS(mode: .require(configuration)) }

            var client: PostgresClient.Configuration.TLS {
                switch mode {
                case .disable: .disable
                case .prefer(let configuration): .prefer(configuration)
                case .require(let configuration): .require(configuration)
                }
            }

            /// Throws when the TLS configuration does not make a context (a certificate that does not load).
            func connection() throws -> PostgresConnection.Configuration.TLS {
                switch mode {
                case .disable: .disable
                case .prefer(let configuration): .prefer(try NIOSSLContext(configuration: configuration))
                case .require(let configuration): .require(try NIOSSLContext(configuration: configuration))
                }
            }
        }

        public init(
            host: String = "127.0.0.1", port: Int = 5432, username: String, password: String? = nil,
            database: String? = nil, tls: TLS = .disable, maximumConnections: Int = 8
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.tls = tls
            self.maximumConnections = maximumConnections
        }

        var clientConfiguration: PostgresClient.Configuration {
            var configuration = PostgresClient.Configuration(
                host: host, port: port, username: username, password: password, database: database, tls: tls.client)
            configuration.options.maximumConnections = maximumConnections
            configuration.options.connectTimeout = .seconds(5)
            return configuration
        }

        /// For the connections the store opens outside its pool, with the pool's TLS settings.
        func connectionConfiguration() throws -> PostgresConnection.Configuration {
            var configuration = PostgresConnection.Configuration(
                host: host, port: port, username: username, password: password, database: database,
                tls: try tls.connection())
            configuration.options.connectTimeout = .seconds(5)
            return configuration
        }

        var address: String { "\(host):\(port)" }
    }
}
#endif
