// Where the durable chapter keeps its operations: a SQLite file (always), or a PostgreSQL
// database (`--postgres URL`, in a tour built with the `PostgreSQL` trait).

import Foundation
import OperationsDurable
import OperationsSQLite
#if PostgreSQL
import OperationsPostgres
#endif

/// The durable chapter's store, as the chapter and its worker processes name it.
public enum DurableStoreLocation: Sendable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    /// Whether this tour was built with PostgreSQL (`--traits PostgreSQL`).
    public static var postgresIsBuiltIn: Bool {
        #if PostgreSQL
        true
        #else
        false
        #endif
    }

    /// The command that builds the tour with PostgreSQL, for the message when it is not.
    public static let postgresBuildHint =
        "the tour was built without PostgreSQL; run it as `swift run --package-path Tour --traits PostgreSQL operations-demo durable --postgres URL`"

    /// The environment variable a worker process reads the PostgreSQL URL from: a password on
    /// the command line is visible to every user of the machine (`ps`), the environment only
    /// to the process's owner.
    public static let postgresURLVariable = "OPERATIONS_DEMO_POSTGRES_URL"

    /// The worker subcommand's arguments that name this store, and what they need in the
    /// worker's environment.
    var worker: (arguments: [String], environment: [String: String]) {
        switch self {
        case .sqlite(let path): (["--store", path], [:])
        case .postgres(let url): (["--postgres-from-environment"], [Self.postgresURLVariable: url])
        }
    }

    public var description: String {
        switch self {
        case .sqlite(let path): "\(path) (SQLite, WAL)"
        case .postgres(let url): "\(Self.withoutPassword(url)) (PostgreSQL)"
        }
    }

    var isPostgres: Bool {
        if case .postgres = self { true } else { false }
    }

    /// Opens the store; `close` shuts it down.
    func open() throws -> (store: any DurableOperationStore, close: @Sendable () async -> Void) {
        switch self {
        case .sqlite(let path):
            let store = SQLiteOperationStore(path: path)
            return (store, { await store.shutdown() })
        case .postgres(let url):
            #if PostgreSQL
            let store = PostgresOperationStore(configuration: try .init(url: url, maximumConnections: 4))
            return (store, { await store.shutdown() })
            #else
            _ = url
            throw TourError.durableWorker(reason: Self.postgresBuildHint)
            #endif
        }
    }

    private static func withoutPassword(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "…"
        return components.string ?? url
    }
}
