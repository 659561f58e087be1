// The live feed: one set of reads per refresh, whatever the number of viewers.
#if Dashboard && SQLite

import FlyingFox
import Foundation
@testable import OperationsDashboard
import OperationsDurable
import OperationsTestHelpers
import OperationsTestSupport
import Testing

@Suite("Dashboard: the live feed")
struct DashboardFeedTests {
    /// Hands out refreshes one at a time: a read waits until the test allows it.
    actor Permits {
        private var granted = 0
        private var taken = 0
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func grant() {
            granted += 1
            if !waiting.isEmpty { waiting.removeFirst().resume() }
        }

        func take() async {
            taken += 1
            if taken > granted { await withCheckedContinuation { waiting.append($0) } }
        }

        var reads: Int { taken }
    }

    /// The refresh number of a pushed overview.
    func refresh(of message: WSMessage) throws -> Int {
        guard case .text(let text) = message else { throw Failure("not text: \(message)") }
        return try DashboardCoding.decoder().decode(OverviewJSON.self, from: Data(text.utf8)).refresh
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test("after long reads the next one waits for their share of time, at most 30 s; one slow read alone does not count")
    func longReadsSpaceTheNext() async throws {
        let clock = ManualClock()
        let readTime = Shared(Duration.seconds(2))
        let feed = DashboardFeed(interval: .seconds(1), maximumReadShare: 0.02, clock: FeedClock(clock)) { refresh in
            // A read that takes the time set: a large store, or a busy one.
            clock.advance(by: readTime.value)
            return OverviewJSON(refresh: refresh, generatedAt: Date(), store: nil, local: [])
        }
        #expect(await feed.current().overview.refresh == 1)
        #expect(await feed.pace == .seconds(1), "the first read alone may be a cold connection's")
        clock.advance(by: .seconds(1))
        #expect(await feed.current().overview.refresh == 2)
        #expect(await feed.pace == .seconds(30), "2 s reads at 2 % would be 98 s apart: at most 30 s")
        readTime.set(.milliseconds(400))
        clock.advance(by: .seconds(29))
        #expect(await feed.current().overview.refresh == 2, "within 30 s of the read's end, the same overview")
        clock.advance(by: .seconds(1))
        #expect(await feed.current().overview.refresh == 3)
        #expect(await feed.pace == .milliseconds(400) * 49, "the shorter of the last two reads: 0.4 s at 2 %")
    }

    @Test("a failed read does not count toward the pause")
    func failedReadsDoNotPace() async throws {
        let clock = ManualClock()
        let feed = DashboardFeed(interval: .seconds(1), maximumReadShare: 0.02, clock: FeedClock(clock)) { refresh in
            // Each read waits 5 s (a deadline) and fails.
            clock.advance(by: .seconds(5))
            let store = StoreJSON(name: "down", error: "the store cannot be reached: timed out", windowMinutes: 60, queues: [], workers: [], failures: [])
            return OverviewJSON(refresh: refresh, generatedAt: Date(), store: store, local: [])
        }
        for expected in 1...3 {
            #expect(await feed.current().overview.refresh == expected)
            #expect(await feed.pace == .seconds(1))
            clock.advance(by: .seconds(1))
        }
    }

    @Test("short reads are paced by the interval alone")
    func shortReadsFollowTheInterval() async throws {
        let clock = ManualClock()
        let feed = DashboardFeed(interval: .seconds(1), maximumReadShare: 0.02, clock: FeedClock(clock)) { refresh in
            clock.advance(by: .milliseconds(10))
            return OverviewJSON(refresh: refresh, generatedAt: Date(), store: nil, local: [])
        }
        #expect(await feed.current().overview.refresh == 1)
        #expect(await feed.pace == .seconds(1))
        clock.advance(by: .seconds(1))
        #expect(await feed.current().overview.refresh == 2)
    }

    @Test("five viewers are sent the same overviews, read once per refresh for all of them")
    func sharedReads() async throws {
        let permits = Permits()
        let feed = DashboardFeed(interval: .milliseconds(1)) { refresh in
            await permits.take()
            return OverviewJSON(refresh: refresh, generatedAt: Date(), store: nil, local: [])
        }
        var viewers: [AsyncStream<WSMessage>.AsyncIterator] = []
        for _ in 0..<5 { viewers.append(await feed.addViewer().messages.makeAsyncIterator()) }
        for expected in 1...3 {
            await permits.grant()
            for index in viewers.indices {
                // A viewer may still hold the previous overview (sent when it joined).
                var seen = try refresh(of: try #require(await viewers[index].next()))
                if seen < expected { seen = try refresh(of: try #require(await viewers[index].next())) }
                #expect(seen == expected, "viewer \(index)")
            }
            // One read per refresh for all five: the next one may have begun (counted, and
            // perhaps waiting for its permit).
            let refreshes = await feed.refreshes
            let reads = await permits.reads
            #expect(reads <= refreshes && refreshes <= expected + 1, "\(reads) reads, \(refreshes) refreshes")
            #expect(reads >= expected)
        }
        await feed.stop()
        // The read the loop began last ends too: no task is left waiting.
        await permits.grant()
    }

    @Test("a failed read keeps the last good values, under the error")
    func failedReadKeepsValues() async throws {
        let permits = Permits()
        let feed = DashboardFeed(interval: .zero) { refresh in
            await permits.take()
            let queues = refresh == 1 ? [QueueJSON(name: "default", counts: DurableOperationCounts(), limit: nil, suspended: false, finishedPerMinute: [])] : []
            let store = StoreJSON(
                name: "store", error: refresh == 1 ? nil : "the store cannot be reached: down", windowMinutes: 60,
                queues: queues, workers: [], failures: [])
            return OverviewJSON(refresh: refresh, generatedAt: Date(), store: store, local: [])
        }
        await permits.grant()
        let good = await feed.current().overview
        #expect(good.store?.queues.map(\.name) == ["default"])
        await permits.grant()
        let failed = await feed.current().overview
        #expect(failed.refresh == 2)
        #expect(failed.store?.error == "the store cannot be reached: down")
        #expect(failed.store?.queues.map(\.name) == ["default"])
    }

    @Test("a viewer that goes away mid-stream is removed, and the reads stop with the last one")
    func viewerLeaves() async throws {
        let feed = DashboardFeed(interval: .milliseconds(5)) { refresh in
            OverviewJSON(refresh: refresh, generatedAt: Date(), store: nil, local: [])
        }
        let staying = await feed.addViewer()
        let leaving = await feed.addViewer()
        var iterator = leaving.messages.makeAsyncIterator()
        _ = await iterator.next()
        #expect(await feed.viewerCount == 2)
        // The socket closed: its stream ends and takes the viewer with it.
        await feed.remove(leaving.id)
        #expect(await feed.viewerCount == 1)
        await feed.remove(staying.id)
        #expect(await feed.viewerCount == 0)
        let settled = await feed.refreshes
        try await pollUntil(10, "the refresh loop to end") { await feed.isRefreshing == false }
        let after = await feed.refreshes
        #expect(after <= settled + 1)
    }
}
#endif
