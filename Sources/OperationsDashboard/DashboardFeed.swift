// The live feed: one set of reads per refresh interval, whatever the number of viewers.
#if Dashboard
import FlyingFox
import Foundation

/// Reads the overview at most once per refresh interval (longer after long reads: ``pace``)
/// and pushes it to every viewer.
///
/// A viewer is a WebSocket (the page) or a request for `/api/overview`: both get the last
/// overview while it is younger than the pace, and share one read when it is older. The
/// refresh loop runs only while a WebSocket viewer is connected.
actor DashboardFeed {
    typealias Load = @Sendable (_ refresh: Int) async -> OverviewJSON

    private let load: Load
    private let interval: Duration
    private let maximumReadShare: Double
    private let clock: FeedClock
    /// How long the last two reads that succeeded took (a failed read, such as one past the
    /// deadline, says nothing of the store's cost).
    private var readDurations: (last: Duration, before: Duration) = (.zero, .zero)
    /// The longest the pacing holds the next read back, however long reads take.
    static let longestPause: Duration = .seconds(30)
    private var viewers: [UInt64: AsyncStream<WSMessage>.Continuation] = [:]
    private var nextViewer: UInt64 = 0
    private var loop: Task<Void, Never>?
    private var inFlight: Task<(overview: OverviewJSON, data: Data), Never>?
    /// Which loop is the current one: a loop that ends leaves a newer one alone.
    private var loopGeneration = 0
    private var last: (overview: OverviewJSON, data: Data, at: Duration)?
    /// The sets of reads made so far.
    private(set) var refreshes = 0

    /// `maximumReadShare`: the largest share of time spent reading (1: the interval alone
    /// paces the reads).
    init(interval: Duration, maximumReadShare: Double = 1, clock: FeedClock = .continuous, load: @escaping Load) {
        self.interval = interval
        self.maximumReadShare = min(1, max(maximumReadShare, 0.000_1))
        self.clock = clock
        self.load = load
    }

    /// The time from the end of a read to the next: the interval, or longer after a long
    /// read, so that reading takes at most `maximumReadShare` of the time.
    /// The shorter of the last two reads counts, so that one slow read (a cold connection)
    /// does not hold the page back; the pause is at most ``longestPause``.
    var pace: Duration {
        let read = min(readDurations.last, readDurations.before)
        return max(interval, min(read * (1 / maximumReadShare - 1), Self.longestPause))
    }

    var viewerCount: Int { viewers.count }

    /// Whether the refresh loop runs (while a viewer is connected).
    var isRefreshing: Bool { loop != nil }

    /// The overview, read now unless the last one is younger than ``pace``.
    func current() async -> (overview: OverviewJSON, data: Data) {
        if let last, clock.elapsed() - last.at < pace { return (last.overview, last.data) }
        return await refresh()
    }

    /// One set of reads, shared with any caller that asks while it runs.
    private func refresh() async -> (overview: OverviewJSON, data: Data) {
        if let inFlight { return await inFlight.value }
        refreshes += 1
        let previous = last?.overview.store
        // The whole answer (read, kept values, encoding) is the shared task's: every caller
        // that waits for it gets the same overview and the same text.
        let task = Task { [load, refreshes] in
            var overview = await load(refreshes)
            // A failed read keeps the last good values on the page, under the error.
            if let error = overview.store?.error, var kept = previous, !kept.queues.isEmpty {
                kept.error = error
                overview.store = kept
            }
            return (overview: overview, data: DashboardCoding.encode(overview))
        }
        inFlight = task
        let started = clock.elapsed()
        let answer = await task.value
        inFlight = nil
        let now = clock.elapsed()
        if answer.overview.store?.error == nil {
            readDurations = (now - started, readDurations.last)
        }
        last = (answer.overview, answer.data, now)
        return answer
    }

    /// A new viewer: the stream of overviews (JSON text) it is sent, starting with the
    /// current one. Ends when the viewer goes (`remove`) or the feed stops.
    func addViewer() -> (id: UInt64, messages: AsyncStream<WSMessage>) {
        nextViewer += 1
        let id = nextViewer
        let (stream, continuation) = AsyncStream<WSMessage>.makeStream(bufferingPolicy: .bufferingNewest(2))
        continuation.onTermination = { [weak self] _ in
            Task { await self?.remove(id) }
        }
        viewers[id] = continuation
        if let last { continuation.yield(.text(String(decoding: last.data, as: UTF8.self))) }
        if loop == nil {
            loopGeneration += 1
            let generation = loopGeneration
            loop = Task { await self.run(generation) }
        }
        return (id, stream)
    }

    func remove(_ id: UInt64) {
        viewers.removeValue(forKey: id)?.finish()
    }

    /// Ends every viewer's stream and the loop.
    func stop() {
        loop?.cancel()
        loop = nil
        for continuation in viewers.values { continuation.finish() }
        viewers.removeAll()
    }

    private func run(_ generation: Int) async {
        while !viewers.isEmpty, !Task.isCancelled {
            let (_, data) = await current()
            let text = String(decoding: data, as: UTF8.self)
            for continuation in viewers.values { continuation.yield(.text(text)) }
            try? await clock.sleep(pace)
        }
        if loopGeneration == generation { loop = nil }
    }
}

/// The feed's time: how much has passed since it began, and a sleep (a manual clock in tests).
struct FeedClock: Sendable {
    let elapsed: @Sendable () -> Duration
    let sleep: @Sendable (Duration) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        elapsed = { origin.duration(to: clock.now) }
        sleep = { try await clock.sleep(for: $0) }
    }

    static let continuous = FeedClock(ContinuousClock())
}

/// The WebSocket of one page: the feed's overviews out; what the page sends is ignored, and
/// its end (or the connection's) removes the viewer.
struct FeedSocket: WSMessageHandler {
    let feed: DashboardFeed

    func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
        let (id, messages) = await feed.addViewer()
        Task { [feed] in
            for await _ in client {}
            await feed.remove(id)
        }
        return messages
    }
}
#endif
