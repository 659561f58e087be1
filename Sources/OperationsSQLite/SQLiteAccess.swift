// The store's one connection, used by one task at a time, and its transactions.
#if SQLite

import Foundation
import Logging
@_spi(Engine) import Operations
import OperationsDurable
import SQLiteNIO

/// Opens the file on first use and hands the connection to one task at a time: the
/// statements of a transaction must not interleave with another task's (on one connection
/// they would join its transaction).
final class SQLiteAccess: Sendable {
    private struct State {
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var connection: SQLiteConnection?
        var closed = false
    }

    let path: String
    let configuration: SQLiteOperationStore.Configuration
    private let state = Locked(State())
    /// A thread of the store's own: a statement waiting for another connection's write lock
    /// blocks its thread, and on a shared pool such waits could take every thread from the
    /// connection that holds the lock (stores in one process on one file would deadlock).
    private let thread: NIOThreadPool
    private let logger = Logger(label: "operations.durable.sqlite")

    init(path: String, configuration: SQLiteOperationStore.Configuration) {
        self.path = path
        self.configuration = configuration
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    /// Runs `body` with the connection, alone; errors become `DurableError`s naming the file.
    func withConnection<T>(_ what: @autoclosure () -> String, _ body: (SQLiteConnection) async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        do {
            return try await body(try await connection())
        } catch {
            throw describe(error, what())
        }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: it takes the file's write lock at once
    /// (waiting up to the busy timeout), so that what it reads cannot change before it writes.
    func write<T>(_ what: @autoclosure () -> String, _ body: (SQLiteTransaction) async throws -> T) async throws -> T {
        try await withConnection(what()) { connection in
            try await connection.execute("BEGIN IMMEDIATE")
            let transaction = SQLiteTransaction(connection: connection)
            do {
                let result = try await body(transaction)
                try await connection.execute("COMMIT")
                return result
            } catch {
                // In a task of its own: sqlite-nio does not run a statement of a cancelled
                // task, and a transaction left open would make every later BEGIN fail. If the
                // rollback fails anyway, the connection is closed and the next use opens one.
                let rolledBack = await shielded { (try? await connection.execute("ROLLBACK")) != nil }
                if !rolledBack { await discard(connection) }
                throw error
            }
        }
    }

    /// Closes `connection` (in an unknown state) and forgets it; called holding it.
    private func discard(_ connection: SQLiteConnection) async {
        state.withLock { state in
            if state.connection === connection { state.connection = nil }
        }
        await shielded { try? await connection.close() }
    }

    private func connection() async throws -> SQLiteConnection {
        let (existing, closed) = state.withLock { ($0.connection, $0.closed) }
        if closed { throw DurableError(.databaseUnreachable, "the SQLite store at \(path) was shut down") }
        if let existing { return existing }
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(
                storage: path == ":memory:" ? .memory : .file(path: path), threadPool: thread, logger: logger,
                on: MultiThreadedEventLoopGroup.singleton.any())
        } catch {
            throw describe(error, "opening the store")
        }
        do {
            // Replaces the library's handler, which retries without sleeping.
            let milliseconds = Int(configuration.busyTimeout.components.seconds * 1000)
                + Int(configuration.busyTimeout.components.attoseconds / 1_000_000_000_000_000)
            try await connection.execute("PRAGMA busy_timeout = \(milliseconds)")
            // Readers do not block the writer, nor the writer readers: workers in several
            // processes claim while others read. Switching a new file to WAL needs it alone:
            // processes opening it at once retry.
            let deadline = ContinuousClock.now + configuration.busyTimeout
            while true {
                do {
                    try await connection.execute("PRAGMA journal_mode = WAL")
                    break
                } catch let error as SQLiteError where Self.isBusy(error) && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            try await connection.execute("PRAGMA synchronous = \(configuration.synchronousFull ? "FULL" : "NORMAL")")
            // Reads the header: a file that is not a database fails here, before anything is written.
            try await connection.execute("SELECT count(*) FROM sqlite_master")
        } catch {
            await shielded { try? await connection.close() }
            throw error
        }
        state.withLock { $0.connection = connection }
        return connection
    }

    static func isBusy(_ error: SQLiteError) -> Bool {
        switch error.reason {
        case .busy, .busyTimeout, .busyInRecovery, .busyInSnapshot, .locked: true
        default: false
        }
    }

    deinit {
        // A store dropped without `shutdown()`: the connection still closes (the library
        // requires it), in a task of its own.
        let (connection, closed) = state.withLock { ($0.connection, $0.closed) }
        guard !closed else { return }
        let thread = self.thread
        Task {
            try? await connection?.close()
            try? await thread.shutdownGracefully()
        }
    }

    /// Closes the connection; later calls throw.
    func close() async {
        await acquire()
        let (connection, wasClosed) = state.withLock { state -> (SQLiteConnection?, Bool) in
            defer {
                state.closed = true
                state.connection = nil
            }
            return (state.connection, state.closed)
        }
        await shielded { try? await connection?.close() }
        release()
        let thread = self.thread
        if !wasClosed { await shielded { try? await thread.shutdownGracefully() } }
    }

    /// Runs `body` in a task of its own, so that the caller's cancellation does not reach it:
    /// sqlite-nio does not run a cancelled task's statements, and what must happen (a
    /// rollback, a close: a connection released unclosed stops the process) would not.
    private func shielded<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
        await Task { await body() }.value
    }

    /// A `DurableError` that names the file and says what failed.
    func describe(_ error: any Error, _ what: String) -> any Error {
        guard let error = error as? SQLiteError else { return error }
        let message = error.message
        switch error.reason {
        case .notADatabase:
            return DurableError(.databaseError, "\(what): \(path) is not a SQLite database (\(message)); nothing was written to it")
        case .readOnly, .readonlyCantLock, .readonlyDirectory, .readonlyInRecovery, .readonlyInRollback, .readonlyBackingMoved:
            return DurableError(.databaseError, "\(what): the SQLite store at \(path) is read-only (\(message))")
        case .full:
            return DurableError(.databaseError, "\(what): the disk holding the SQLite store at \(path) is full (\(message))")
        case .cantOpen, .cantOpenDirectory, .cantOpenInvalidPath:
            return DurableError(.databaseUnreachable, "\(what): cannot open the SQLite store at \(path) (\(message))")
        case .busy, .busyTimeout, .busyInRecovery, .busyInSnapshot, .locked:
            return DurableError(.databaseUnreachable, "\(what): the SQLite store at \(path) stayed locked by another connection for longer than the busy timeout (\(message))")
        case .corrupt, .corruptIndex, .corruptSequenceSchema:
            return DurableError(.databaseError, "\(what): the SQLite store at \(path) is corrupt (\(message))")
        default:
            return DurableError(.databaseError, "\(what): SQLite store at \(path): \(message)")
        }
    }
}

/// The statements of one open transaction, and the notifications it records.
struct SQLiteTransaction {
    let connection: SQLiteConnection

    @discardableResult
    func rows(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        try await connection.rows(sql, binds)
    }

    /// Records a notification in the transaction: listeners in every process read it after
    /// the commit (a rollback removes it with the rest).
    func notify(_ notification: DurableStoreNotification) async throws {
        let (kind, payload): (String, String)
        switch notification {
        case .workAvailable(let queue): (kind, payload) = ("w", queue)
        case .finished(let id): (kind, payload) = ("f", "\(id.rawValue)")
        case .cancelRequested(let id): (kind, payload) = ("c", "\(id.rawValue)")
        case .resynchronize: return
        }
        try await rows(
            "INSERT INTO durable_events (kind, payload, at) VALUES (?, ?, ?)", [.text(kind), .text(payload), .now])
    }
}

extension SQLiteConnection {
    func execute(_ sql: String, _ binds: [SQLiteData] = []) async throws {
        _ = try await rows(sql, binds)
    }

    /// The statement's rows, gathered under a lock as the connection's thread reads them.
    /// (sqlite-nio's own `query(_:_:)` gathers them in an unsynchronized variable that it
    /// reads after the thread pool answers: correct, but Thread Sanitizer cannot see the
    /// ordering and reports it.)
    func rows(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        let gathered = Locked<[SQLiteRow]>([])
        try await query(sql, binds) { row in gathered.withLock { $0.append(row) } }
        return gathered.withLock { $0 }
    }
}

extension SQLiteData {
    /// The current time, in seconds since 1970 (every process on the machine reads one clock).
    static var now: SQLiteData { .float(Date().timeIntervalSince1970) }

    static func date(_ date: Date) -> SQLiteData { .float(date.timeIntervalSince1970) }
    static func int(_ value: Int) -> SQLiteData { .integer(SQLiteInt64(value)) }
    static func id(_ id: DurableOperationID) -> SQLiteData { .integer(SQLiteInt64(id.rawValue)) }
    static func optionalText(_ text: String?) -> SQLiteData { text.map { .text($0) } ?? .null }
}

extension SQLiteRow {
    func int(_ name: String) -> Int { column(name)?.integer.map { Int($0) } ?? 0 }
    func optionalInt(_ name: String) -> Int? {
        guard let value = column(name), !value.isNull else { return nil }
        return value.integer.map { Int($0) }
    }
    func text(_ name: String) -> String { column(name)?.string ?? "" }
    func optionalText(_ name: String) -> String? {
        guard let value = column(name), !value.isNull else { return nil }
        return value.string
    }
    func date(_ name: String) -> Date { Date(timeIntervalSince1970: column(name)?.double ?? 0) }
    func optionalDate(_ name: String) -> Date? {
        guard let value = column(name), !value.isNull, let seconds = value.double else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }
    func bool(_ name: String) -> Bool { (column(name)?.integer ?? 0) != 0 }
    func double(_ name: String) -> Double { column(name)?.double ?? 0 }
}
#endif
