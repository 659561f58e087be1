// When a worker whose heartbeats go unanswered stops its bodies, and which attempts it gives back.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
@testable import OperationsDurable
import Testing

@Suite("Leases as a worker keeps them")
struct LeaseKeepingTests {
    let start = ContinuousClock.now
    let leases = LeaseKeeping(lease: .seconds(5), heartbeatInterval: .seconds(1))

    @Test("a body is stopped an interval before the lease of its last renewal may end")
    func stopAnIntervalBefore() {
        #expect(leases.stopAt(renewedAt: start) == start + .seconds(4))
    }

    @Test("a heartbeat waits only until the first body must be stopped, however late it begins")
    func callDeadlineEndsAtTheFirstStop() {
        // Renewed at 0: stopped at 4. A heartbeat that failed fast, then one begun at 3.5,
        // may wait half a second, not a lease less an interval.
        #expect(leases.callDeadline(at: start + .seconds(3.5), earliestStop: start + .seconds(4)) == .seconds(0.5))
        // Past the stop (the loop stops the body before it calls): a moment, not seconds.
        #expect(leases.callDeadline(at: start + .seconds(6), earliestStop: start + .seconds(4)) == .milliseconds(1))
        // Nothing to stop: a lease less an interval.
        #expect(leases.callDeadline(at: start, earliestStop: nil) == .seconds(4))
    }

    @Test("the loop sleeps an interval, or less when a body must be stopped sooner")
    func pauseEndsAtTheFirstStop() {
        #expect(leases.pause(at: start, earliestStop: nil) == .seconds(1))
        #expect(leases.pause(at: start + .milliseconds(3_700), earliestStop: start + .seconds(4)) == .milliseconds(300))
        #expect(leases.pause(at: start + .seconds(5), earliestStop: start + .seconds(4)) == .zero)
    }

    @Test("a worker whose lease is shorter than two heartbeat intervals is refused, naming both")
    func shortLeaseIsRefused() async throws {
        try await withStore(.named("SQLite")) { store in
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

@Suite("Attempts a worker holds without running them")
struct UnstartedLeasesTests {
    let one = DurableOperationID(rawValue: 1)
    let two = DurableOperationID(rawValue: 2)

    /// `begun` claims, of which the first `ended` have ended.
    func claims(begun: Int, ended: Int) -> ClaimCount {
        var count = ClaimCount()
        for _ in 0..<begun { _ = count.begin() }
        for claim in 0..<ended { count.end(claim + 1) }
        return count
    }

    func attempt(_ operation: DurableOperationID, _ number: Int) -> DurableAttemptID {
        DurableAttemptID(operation: operation, attempt: number)
    }

    @Test("unnamed while a claim is in flight: renewed, and given back once that claim has ended without it")
    func givenBackOnceItsClaimEnded() {
        var unstarted = UnstartedLeases()
        // Claim 3 is in flight: operation 1 may be its answer.
        #expect(unstarted.heartbeatAnswered(held: [], unnamed: [attempt(one, 1)], running: [], claims: claims(begun: 3, ended: 2)).isEmpty)
        #expect(unstarted.renewing == [one])
        // Named now, so renewed; claim 4 began and is in flight; claim 3 ended without starting it.
        #expect(unstarted.heartbeatAnswered(held: [one], unnamed: [], running: [], claims: claims(begun: 4, ended: 3)) == [attempt(one, 1)])
        #expect(unstarted.renewing.isEmpty)
    }

    @Test("unnamed while a claim is in flight: later claims that begin and end do not settle it")
    func laterClaimsDoNotSettleAnEarlierOne() {
        var unstarted = UnstartedLeases()
        var count = ClaimCount()
        let first = count.begin()
        #expect(unstarted.heartbeatAnswered(held: [], unnamed: [attempt(one, 1)], running: [], claims: count).isEmpty)
        // Two claims made with batches of ends come and go while the first is still in flight.
        for _ in 0..<2 { count.end(count.begin()) }
        #expect(unstarted.heartbeatAnswered(held: [one], unnamed: [], running: [], claims: count).isEmpty)
        #expect(unstarted.renewing == [one])
        count.end(first)
        #expect(unstarted.heartbeatAnswered(held: [one], unnamed: [], running: [], claims: count) == [attempt(one, 1)])
    }

    @Test("unnamed with no claim in flight: given back at once, by attempt")
    func givenBackAtOnceWhenNoClaimIsInFlight() {
        var unstarted = UnstartedLeases()
        let given = unstarted.heartbeatAnswered(
            held: [two], unnamed: [attempt(one, 3)], running: [two], claims: claims(begun: 5, ended: 5))
        #expect(given == [attempt(one, 3)])
    }

    @Test("an operation named because it ran, that ended before the answer, is never given back")
    func namedBecauseRunningIsNotAStray() {
        var unstarted = UnstartedLeases()
        // Its body ended (and a retry may be claimed any moment): held, not running, not unnamed.
        #expect(unstarted.heartbeatAnswered(held: [one], unnamed: [], running: [], claims: claims(begun: 2, ended: 2)).isEmpty)
        #expect(unstarted.renewing.isEmpty)
    }

    @Test("one that started meanwhile, or that the store no longer says is held, is forgotten and not given back")
    func startedOrGoneIsForgotten() {
        var unstarted = UnstartedLeases()
        _ = unstarted.heartbeatAnswered(held: [], unnamed: [attempt(one, 1), attempt(two, 1)], running: [], claims: claims(begun: 1, ended: 0))
        #expect(unstarted.renewing == [one, two])
        // Operation 1 was that claim's answer and runs; operation 2's lease was taken back.
        #expect(unstarted.heartbeatAnswered(held: [one], unnamed: [], running: [one], claims: claims(begun: 1, ended: 1)).isEmpty)
        #expect(unstarted.renewing.isEmpty)
    }
}
#endif
