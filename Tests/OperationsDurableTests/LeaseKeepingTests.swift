// When a worker whose heartbeats go unanswered stops its bodies.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
@testable import OperationsDurable
import Testing

@Suite("Leases as a worker keeps them")
struct LeaseKeepingTests {
    let start = ContinuousClock.now

    @Test("bodies are stopped an interval before the lease of the last answered heartbeat may end, however late the next round begins")
    func bodiesStopBeforeTheLeaseEnds() {
        let leases = LeaseKeeping(lease: .seconds(5), heartbeatInterval: .seconds(1), renewedAt: start)
        #expect(leases.stopBodiesAt == start + .seconds(4))
        // The next round begins an interval (and a slow call) later: its call may wait only
        // until the bodies must be stopped, not a whole lease less an interval from its start.
        #expect(leases.callDeadline(at: start + .seconds(1.5)) == .seconds(2.5))
        #expect(!leases.mustStopBodies(at: start + .seconds(3.9)))
        #expect(leases.mustStopBodies(at: start + .seconds(4)))
        // Once the bodies are stopped, a heartbeat may take its time.
        #expect(leases.callDeadline(at: start + .seconds(6)) == .seconds(4))
    }

    @Test("an answered heartbeat counts from its start, and an older answer never moves the renewal back")
    func renewalCountsFromTheStart() {
        var leases = LeaseKeeping(lease: .seconds(5), heartbeatInterval: .seconds(1), renewedAt: start)
        leases.renewed(at: start + .seconds(3))
        #expect(leases.stopBodiesAt == start + .seconds(7))
        leases.renewed(at: start + .seconds(2))
        #expect(leases.renewedAt == start + .seconds(3))
    }

    @Test("a worker whose lease is shorter than two heartbeat intervals is refused, naming both")
    func shortLeaseIsRefused() async throws {
        try await withStore(.sqlite) { store in
            var configuration = DurableWorker.Configuration()
            configuration.lease = .seconds(1)
            configuration.heartbeatInterval = .milliseconds(600)
            let worker = DurableWorker(store: store, queues: ["default"], kinds: allTestKinds, configuration: configuration)
            let error = await #expect(throws: DurableError.self) { try await worker.run() }
            #expect(error?.code == .invalidArgument)
            #expect("\(error.map { "\($0)" } ?? "")".contains("1.0 seconds") == true)
            #expect("\(error.map { "\($0)" } ?? "")".contains("0.6 seconds") == true)
        }
    }
}
#endif

#if PostgreSQL && SQLite
@Suite("Operations a worker holds without running them")
struct UnstartedLeasesTests {
    let one = DurableOperationID(rawValue: 1)
    let two = DurableOperationID(rawValue: 2)

    func claims(begun: Int, ended: Int) -> ClaimCount {
        var count = ClaimCount()
        for _ in 0..<begun { count.begin() }
        for _ in 0..<ended { count.end() }
        return count
    }

    @Test("held but not running while a claim is in flight: renewed, and given back once that claim has ended without it")
    func givenBackOnceItsClaimEnded() {
        var unstarted = UnstartedLeases()
        // Claim 3 is in flight: operation 1 may be its answer.
        #expect(unstarted.heartbeatAnswered(held: [one], running: [], claims: claims(begun: 3, ended: 2)).isEmpty)
        #expect(unstarted.renewing == [one])
        // Claim 4 began and is in flight too; claim 3 ended without starting it.
        #expect(unstarted.heartbeatAnswered(held: [one], running: [], claims: claims(begun: 4, ended: 3)) == [one])
        #expect(unstarted.renewing.isEmpty)
    }

    @Test("held but not running with no claim in flight: given back at once")
    func givenBackAtOnceWhenNoClaimIsInFlight() {
        var unstarted = UnstartedLeases()
        #expect(unstarted.heartbeatAnswered(held: [one, two], running: [two], claims: claims(begun: 5, ended: 5)) == [one])
    }

    @Test("one that started meanwhile, or that the store no longer says is held, is forgotten and not given back")
    func startedOrGoneIsForgotten() {
        var unstarted = UnstartedLeases()
        _ = unstarted.heartbeatAnswered(held: [one, two], running: [], claims: claims(begun: 1, ended: 0))
        #expect(unstarted.renewing == [one, two])
        // Operation 1 was that claim's answer and runs; operation 2's lease was taken back.
        #expect(unstarted.heartbeatAnswered(held: [one], running: [one], claims: claims(begun: 1, ended: 1)).isEmpty)
        #expect(unstarted.renewing.isEmpty)
    }
}
#endif
