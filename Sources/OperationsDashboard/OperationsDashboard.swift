// The dashboard: a web page over a durable store and this process's queues.
#if Dashboard
import FlyingFox
import FlyingSocks
import Foundation
@_spi(Engine) import Operations
import class Operations.OperationQueue
import OperationsDurable
import ServiceLifecycle

/// Serves a web page that shows durable queues (counts, throughput, limits, workers,
/// failures, each operation with its attempts and dependencies) and the `OperationQueue`s
/// of this process (a live timeline, why operations wait, stall reports).
///
/// Start it from a process that already runs, as one more `Service` of a `ServiceGroup` or
/// with ``start()``; or run the `operations-dashboard` command for a store. Read-only unless
/// ``Configuration/actionToken`` is set: then cancel, retry, suspend, resume and limit
/// changes are accepted with that token.
public final class OperationsDashboard: Service, Sendable {
    /// How the dashboard listens and reads.
    public struct Configuration: Sendable {
        /// The address to listen on; 127.0.0.1 by default (this machine only).
        public var host: String
        /// The port; 0 picks a free one (read it from ``OperationsDashboard/url``).
        public var port: Int
        /// How often the overview is read for all viewers, and how old an overview a viewer
        /// may be sent.
        public var refreshInterval: Duration
        /// How far back finished operations are counted and failures grouped.
        public var finishedWindow: Duration
        /// The operations a list shows at once.
        public var pageSize: Int
        /// The token actions need (`Authorization: Bearer <token>`); nil: read-only.
        public var actionToken: String?
        /// How long a read or an action may take before the page says the store cannot be
        /// reached (a database that is down may not answer at all).
        public var readDeadline: Duration
        /// Further names the dashboard answers to (the `Host` of a request), besides
        /// ``host``, `localhost` and `127.0.0.1`: the machine's name when it listens on
        /// `0.0.0.0`. Requests addressed to other names are refused, so that another site's
        /// page cannot reach the dashboard by rebinding its own name to this address.
        public var allowedHosts: [String] = []
        /// The largest share of time the dashboard spends reading the overview, 0.02 by
        /// default: after reads that took 100 ms, the next one waits 4.9 s from the end of the
        /// last, however short ``refreshInterval`` is (the shorter of the last two successful
        /// reads counts; the pause is at most 30 s). It bounds what viewers cost the workers on
        /// a large or busy store, where one overview takes long; the in-process queues are
        /// refreshed with it. 1: no bound beyond the interval.
        public var maximumReadShare: Double = 0.02

        public init(
            host: String = "127.0.0.1", port: Int = 8080, refreshInterval: Duration = .seconds(2),
            finishedWindow: Duration = .seconds(3600), pageSize: Int = 50, actionToken: String? = nil,
            readDeadline: Duration = .seconds(5)
        ) {
            self.readDeadline = readDeadline
            self.host = host
            self.port = port
            self.refreshInterval = refreshInterval
            self.finishedWindow = finishedWindow
            self.pageSize = pageSize
            self.actionToken = actionToken
        }
    }

    private let store: (any DurableStoreInspection)?
    private let storeName: String?
    private let configuration: Configuration
    private let local: LocalQueues
    private let feed: DashboardFeed
    private let lifecycle = Locked<Lifecycle>(.idle)

    /// A server that listens, and the task that runs it.
    private struct Running: Sendable {
        let server: HTTPServer
        let task: Task<Void, any Error>
        let url: URL
    }

    /// Not serving; binding (every start waits for the one task); serving; closing (a start
    /// waits for it, then binds anew).
    private enum Lifecycle {
        case idle
        case starting(Task<Running, any Error>)
        case running(Running)
        case stopping(Task<Void, Never>)
    }

    /// A dashboard for `store` (nil: this process's queues only), named `storeName` on the
    /// page, and for the queues given to ``watch(_:)``.
    public init(store: (any DurableStoreInspection)? = nil, storeName: String? = nil, configuration: Configuration = Configuration()) {
        self.store = store
        self.storeName = storeName ?? store.map { "\(type(of: $0))" }
        self.configuration = configuration
        let local = LocalQueues(capacity: 500)
        self.local = local
        let window = configuration.finishedWindow
        let deadline = configuration.readDeadline
        let name = self.storeName
        feed = DashboardFeed(interval: configuration.refreshInterval, maximumReadShare: configuration.maximumReadShare) { [store] refresh in
            await Self.overview(refresh: refresh, store: store, storeName: name, window: window, deadline: deadline, local: local)
        }
    }

    /// Shows `queue` on the page: its recent operations, why they wait, its stall reports.
    public func watch(_ queue: OperationQueue) {
        local.watch(queue)
    }

    /// The address the page is served at, once started.
    public var url: URL? {
        lifecycle.withLock { state in
            if case .running(let running) = state { running.url } else { nil }
        }
    }

    /// The sets of reads the overview took so far (one per refresh interval at most,
    /// whatever the number of viewers).
    public var refreshes: Int {
        get async { await feed.refreshes }
    }

    /// Starts serving; returns the page's address. Throws when the address cannot be bound.
    /// Starts made while one is under way wait for it and share its server.
    @discardableResult
    public func start() async throws -> URL {
        if let token = configuration.actionToken, token.isEmpty {
            throw DashboardError("the action token is empty: give a token, or nil for a read-only dashboard")
        }
        enum Step {
            case serving(URL)
            case waiting(Task<Running, any Error>)
            case afterStop(Task<Void, Never>)
        }
        let task: Task<Running, any Error>
        waiting: while true {
            // The start is registered before anything suspends: no second one can begin meanwhile.
            let step: Step = lifecycle.withLock { state in
                switch state {
                case .running(let running): return .serving(running.url)
                case .starting(let task): return .waiting(task)
                case .stopping(let task): return .afterStop(task)
                case .idle:
                    let task = Task { try await self.listen() }
                    state = .starting(task)
                    return .waiting(task)
                }
            }
            switch step {
            case .serving(let url): return url
            case .afterStop(let stopping): await stopping.value
            case .waiting(let starting):
                task = starting
                break waiting
            }
        }
        let result = await task.result
        return try lifecycle.withLock { state in
            switch (state, result) {
            case (.starting(let current), .success(let running)) where current == task:
                state = .running(running)
                return running.url
            case (.starting(let current), .failure(let error)) where current == task:
                state = .idle
                throw error
            case (.running(let running), .success):
                // Another caller waiting for the same start recorded it first.
                return running.url
            case (_, .failure(let error)):
                throw error
            case (_, .success):
                throw DashboardError("the dashboard was stopped while it started")
            }
        }
    }

    /// Stops serving: closes the viewers' connections and the listening socket. A start
    /// under way is waited for, then stopped; a stop under way is waited for. The queues given
    /// to ``watch(_:)`` stay watched: a later start shows them.
    public func stop() async {
        let stopping: Task<Void, Never>? = lifecycle.withLock { state in
            switch state {
            case .idle: return nil
            case .stopping(let task): return task
            case .running(let running):
                let task = Task { await self.shutDown(running) }
                state = .stopping(task)
                return task
            case .starting(let starting):
                let task = Task {
                    if let running = try? await starting.value { await self.shutDown(running) }
                }
                state = .stopping(task)
                return task
            }
        }
        guard let stopping else { return }
        await stopping.value
        lifecycle.withLock { state in
            if case .stopping(let task) = state, task == stopping { state = .idle }
        }
    }

    private func shutDown(_ running: Running) async {
        await feed.stop()
        await running.server.stop(timeout: 1)
        running.task.cancel()
    }

    deinit {
        local.stopAll()
    }

    /// Binds the address and serves in a task of its own.
    private func listen() async throws -> Running {
        guard let port = UInt16(exactly: configuration.port) else {
            throw DashboardError("port \(configuration.port) is not a port number")
        }
        let address = try sockaddr_in.inet(ip4: configuration.host, port: port)
        let server = HTTPServer(address: address, logger: .disabled)
        await DashboardRoutes(store: store, storeName: storeName, local: local, feed: feed, configuration: configuration)
            .install(on: server)
        let task = Task { try await server.run() }
        do {
            try await server.waitUntilListening(timeout: 10)
        } catch {
            task.cancel()
            throw DashboardError("cannot listen on \(configuration.host):\(configuration.port): \(error)")
        }
        guard case .ip4(_, let bound)? = await server.listeningAddress else {
            await server.stop()
            task.cancel()
            throw DashboardError("no listening address on \(configuration.host):\(configuration.port)")
        }
        return Running(server: server, task: task, url: URL(string: "http://\(configuration.host):\(bound)")!)
    }

    /// Serves until the task is cancelled or the service group shuts down gracefully.
    public func run() async throws {
        try await start()
        let stopped = AsyncStream<Void>.makeStream()
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                for await _ in stopped.stream {}
            } onGracefulShutdown: {
                stopped.continuation.finish()
            }
        } onCancel: {
            stopped.continuation.finish()
        }
        await stop()
    }

    /// One set of reads: the overview every viewer is sent.
    private static func overview(
        refresh: Int, store: (any DurableStoreInspection)?, storeName: String?, window: Duration, deadline: Duration,
        local: LocalQueues
    ) async -> OverviewJSON {
        let now = Date()
        var storeJSON: StoreJSON?
        if let store {
            let minutes = max(1, Int(window.components.seconds / 60))
            do {
                storeJSON = try await withReadDeadline(deadline, "reading the overview") {
                    let summaries = try await store.queueSummaries(window: window, now: now)
                    var queues: [QueueJSON] = []
                    for summary in summaries {
                        let perMinute = try await store.finishedPerMinute(queue: summary.name, minutes: min(minutes, 30), now: now)
                        queues.append(QueueJSON(
                            name: summary.name, counts: summary.counts, limit: summary.limit, suspended: summary.suspended,
                            finishedPerMinute: perMinute))
                    }
                    return StoreJSON(
                        name: storeName ?? "store", error: nil, windowMinutes: minutes, queues: queues,
                        workers: try await store.workers(window: window, now: now),
                        failures: try await store.failureGroups(queue: nil, window: window, now: now, limit: 20))
                }
            } catch {
                storeJSON = StoreJSON(
                    name: storeName ?? "store", error: "the store cannot be reached: \(error)", windowMinutes: minutes,
                    queues: [], workers: [], failures: [])
            }
        }
        return OverviewJSON(refresh: refresh, generatedAt: now, store: storeJSON, local: local.json)
    }
}

/// Why the dashboard cannot start.
public struct DashboardError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
#endif
