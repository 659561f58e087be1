// A process's worker: claims operations of its queues and kinds, runs their bodies.
#if Durable

import Foundation
@_spi(Engine) import Operations
import ServiceLifecycle

/// Runs durable operations: claims them from the store in batches, runs their bodies,
/// records how they ended, heartbeats its leases and rescues the leases of dead workers.
///
/// It stops gracefully on SIGTERM and SIGINT (``Configuration/stopSignals``), on ``stop()``,
/// and as a `Service` of swift-service-lifecycle on a `ServiceGroup`'s graceful shutdown: it
/// stops claiming, lets running bodies finish within ``Configuration/shutdownDeadline``, then
/// cancels the rest and gives their operations back to the store (they run again elsewhere,
/// and the interrupted attempt does not count against the maximum; nothing is lost).
///
/// Its attempts are reported as ``DurableEvent``s (see ``DurableEventSource``), which the
/// tracing, metrics and logging adapters read.
public final class DurableWorker: Service, DurableEventSource, Sendable {
    /// Timings of a worker.
    public struct Configuration: Sendable {
        /// How long the store keeps an operation claimed without a heartbeat. A killed
        /// worker's operations are rescued about this long after its last heartbeat. At least
        /// twice ``heartbeatInterval`` (`run()` throws otherwise): a worker whose heartbeats go
        /// unanswered stops its bodies an interval before its leases may end.
        public var lease: Duration = .seconds(5)
        /// How often the worker renews its leases and rescues expired ones.
        public var heartbeatInterval: Duration = .seconds(1)
        /// How long the worker waits for one answer of the store before it gives up on the call
        /// and tries again: a call whose connection dropped mid-way may never answer, and a
        /// worker waiting on it would hold its operations (and renew their leases) for ever.
        public var storeCallTimeout: Duration = .seconds(10)
        /// How long a graceful shutdown lets running bodies finish.
        public var shutdownDeadline: Duration = .seconds(10)
        /// How long finished operations are kept before they are pruned (`nil`: forever).
        public var retention: Duration? = .seconds(7 * 24 * 3600)
        /// A readable prefix of the worker's identity (a unique suffix is added).
        public var name: String = "worker"
        /// The signals on which a running worker stops gracefully, as ``DurableWorker/stop()``
        /// does (a second one gives back what still runs at once): SIGTERM, which `docker stop`
        /// and systemd send, and SIGINT (Ctrl-C). While the worker runs, they no longer end
        /// the process; the process's earlier handling is restored when it returns. Empty:
        /// the worker leaves signals alone (a `ServiceGroup`'s own handling still applies).
        public var stopSignals: [Int32] = [SIGTERM, SIGINT]
        /// How long a claim or a record of ends must have waited to be given up on when the
        /// store reconnects (a healthy one answers within milliseconds).
        var staleClaimAge: Duration = .milliseconds(250)

        public init() {}
    }

    /// The worker's identity in attempts: its name and a random suffix.
    public let id: String
    let store: any DurableOperationStore
    let queues: [String]
    let kinds: [String: any DurableOperation]
    let duplicateKinds: [String]
    /// How many bodies the worker runs at once.
    public let concurrency: Int
    let configuration: Configuration
    let state = Locked(WorkerState())
    let wakeSignal = WakeSignal()
    /// The claims and records of ends waiting for the database, given up on when it comes back.
    let callsInFlight = StoreCallsInFlight()
    let completions: CompletionBatcher
    let broadcaster: DurableEventBroadcaster

    /// The concurrency a worker has unless told otherwise.
    public static let defaultConcurrency = 32

    /// A worker of `queues` that runs the given kinds.
    ///
    /// - Parameters:
    ///   - store: where the operations are.
    ///   - queues: the queues it claims from, in turn.
    ///   - kinds: the kinds of work it runs, one value of each.
    ///   - concurrency: how many bodies run at once in this process. A slot freed by a body's
    ///     end is filled by the same call that records the end, so more slots mean fewer
    ///     round trips per operation. For bodies that mostly wait (HTTP, files, other
    ///     services), 128; for bodies that compute, about the number of cores. The queue's
    ///     ``DurableQueue/setMaxConcurrentOperationCount(_:)`` bounds the whole cluster.
    ///   - configuration: its timings, name and stop signals.
    public init(
        store: any DurableOperationStore, queues: [String], kinds: [any DurableOperation],
        concurrency: Int = DurableWorker.defaultConcurrency,
        configuration: Configuration = Configuration()
    ) {
        self.id = "\(configuration.name)-\(UUID().uuidString.prefix(8).lowercased())"
        self.store = store
        self.queues = queues
        var registry: [String: any DurableOperation] = [:]
        var duplicates: [String] = []
        for kind in kinds {
            let name = type(of: kind).kind
            if registry[name] != nil { duplicates.append(name) }
            registry[name] = kind
        }
        self.kinds = registry
        self.duplicateKinds = duplicates
        self.concurrency = concurrency
        self.configuration = configuration
        self.completions = CompletionBatcher()
        self.broadcaster = DurableEventBroadcaster(deliveringOnOwnQueue: true, source: "durable worker \(id)")
    }

    /// Runs until graceful shutdown or cancellation; throws when the store cannot be reached
    /// at start, or the worker is misconfigured.
    public func run() async throws {
        guard duplicateKinds.isEmpty else {
            throw DurableError(.invalidArgument, "worker \(id): kinds registered twice: \(duplicateKinds.joined(separator: ", "))")
        }
        guard concurrency >= 1, !queues.isEmpty, !kinds.isEmpty else {
            throw DurableError(.invalidArgument, "worker \(id): needs concurrency ≥ 1 (is \(concurrency)), a queue and a kind")
        }
        guard configuration.heartbeatInterval > .zero, configuration.lease >= configuration.heartbeatInterval * 2 else {
            throw DurableError(
                .invalidArgument,
                "worker \(id): its lease (\(configuration.lease)) must be at least twice its heartbeat interval (\(configuration.heartbeatInterval)), which must be positive: bodies are stopped an interval before the lease may end")
        }
        try await store.checkConnection()
        // Registers the worker, so that waitDescription knows its kinds.
        let (store, worker, queues, kindNames, lease) = (store, id, queues, kinds.keys.sorted(), configuration.lease)
        _ = try await withDeadline(configuration.storeCallTimeout, "registering worker \(worker)") {
            try await store.heartbeat(worker: worker, queues: queues, kinds: kindNames, holding: [], lease: lease)
        }
        // A first signal stops the worker; a second gives back what still runs at once.
        let signals = StopSignals.watch(configuration.stopSignals) { [weak self] in self?.stopOnSignal() }
        defer { StopSignals.stopWatching(signals) }
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.heartbeatLoop() }
                group.addTask { await self.rescueLoop() }
                group.addTask { await self.notificationLoop() }
                await self.claimLoop()
                await self.drain()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }

    /// Calls `handler` for each event of the attempts this worker runs: `started`, then
    /// `retried` or `finished`, with `cancelled` between when a cancel reaches it.
    public func addEventHandler(_ handler: @escaping @Sendable (DurableEvent) -> Void) -> DurableEventSubscription {
        broadcaster.addHandler(handler)
    }

    /// Stops claiming; `run()` then drains and returns.
    public func stop() {
        state.withLock { $0.stopping = true }
        wakeSignal.wake()
    }

    private func stopOnSignal() {
        state.withLock { state in
            state.signals += 1
            if state.signals > 1 { state.hurried = true }
            state.stopping = true
        }
        wakeSignal.wake()
    }
}

struct RunningBody {
    let flag: DurableCancellationFlag
    let attempt: Int
    /// When its claim's answer arrived.
    let claimedAt: ContinuousClock.Instant
    /// No later than the last renewal of its lease: its claim call's start, then the start of
    /// each answered heartbeat that named it.
    var renewedAt: ContinuousClock.Instant
    /// For its events.
    let queue: String
    let kind: String
    var task: Task<Void, Never>?
    var givingBack = false
    /// Why the worker stopped the body, when it did so because its lease may have ended.
    var stoppedForLease: String?
    /// The worker asked the body to stop for its lease (it may have been cancelled before).
    var leaseStopped = false
    /// Its body returned and its end event is recorded.
    var ended = false

    init(
        flag: DurableCancellationFlag, attempt: Int, claimedAt: ContinuousClock.Instant, renewedAt: ContinuousClock.Instant,
        queue: String, kind: String
    ) {
        self.flag = flag
        self.attempt = attempt
        self.claimedAt = claimedAt
        self.renewedAt = renewedAt
        self.queue = queue
        self.kind = kind
    }
}

struct WorkerState {
    var running: [DurableOperationID: RunningBody] = [:]
    var stopping = false
    /// A second stop signal came: what still runs is given back without waiting for the deadline.
    var hurried = false
    /// Stop signals received.
    var signals = 0
    /// Claims made with a batch of ends, which take the worker's queues in turn.
    var claimsWithEnds = 0
    var claims = ClaimCount()
}

/// The worker's claims so far, numbered as they begin. Claims overlap (the claim loop's and
/// those made with a batch of ends); each ends when its operations are registered or the
/// worker gave up on it.
struct ClaimCount: Equatable {
    private(set) var begun = 0
    private(set) var inFlight: Set<Int> = []

    /// Returns the claim's number, for `end(_:)`.
    mutating func begin() -> Int {
        begun += 1
        inFlight.insert(begun)
        return begun
    }

    mutating func end(_ claim: Int) {
        precondition(inFlight.remove(claim) != nil, "durable worker: claim \(claim) ended twice or never began")
    }

    /// Whether every claim numbered up to `number` has ended.
    func allEnded(through number: Int) -> Bool {
        !inFlight.contains { $0 <= number }
    }
}

/// Attempts the store says the worker holds whose operations it does not run. Each may be the
/// answer of a claim still in flight, about to start; once every claim that could have claimed
/// it has ended, it never will (a claim the worker gave up on, or a result it dropped), and it
/// is given back. Until then its lease is renewed, so that it is not rescued as a failed attempt.
/// Only attempts the store did not see named count: one named because it ran is never a stray.
struct UnstartedLeases {
    /// Each such attempt, with the number of claims begun when it was first seen.
    private(set) var seen: [DurableOperationID: (attempt: Int, claimsBegun: Int)] = [:]

    /// What the next heartbeat names besides the running operations.
    var renewing: Set<DurableOperationID> { Set(seen.keys) }

    /// After a heartbeat: `held` the operations it renewed, `unnamed` the attempts it reports
    /// held but not named, `running` what runs now. Returns the attempts to give back.
    mutating func heartbeatAnswered(
        held: Set<DurableOperationID>, unnamed: Set<DurableAttemptID>, running: Set<DurableOperationID>, claims: ClaimCount
    ) -> [DurableAttemptID] {
        // Still the worker's, with the same attempt, and still not running here.
        seen = seen.filter { id, entry in
            !running.contains(id)
                && (held.contains(id) || unnamed.contains(DurableAttemptID(operation: id, attempt: entry.attempt)))
        }
        for given in unnamed where !running.contains(given.operation) && seen[given.operation]?.attempt != given.attempt {
            seen[given.operation] = (given.attempt, claims.begun)
        }
        let settled = seen.filter { claims.allEnded(through: $0.value.claimsBegun) }
            .map { DurableAttemptID(operation: $0.key, attempt: $0.value.attempt) }.sorted()
        for given in settled { seen[given.operation] = nil }
        return settled
    }
}
#endif
