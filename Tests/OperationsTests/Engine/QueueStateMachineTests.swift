@testable import Operations
import Synchronization
import Testing
import TestTraits

/// The queue's state machine (`QueueCore`) driven directly, without threads: each event
/// returns what the queue must do, and its parts keep the cases that exclude each other.
@Suite("Queue: its state machine, driven event by event")
struct QueueStateMachineTests {
    /// A ready operation admitted to `core` (delivered to the ready list).
    static func admitReady(_ core: inout QueueCore, _ name: String) -> Operation {
        let operation = BlockOperation {}
        operation.name = name
        let delivered = core.admitted(operation, readyIn: .normal, sequence: nil)
        #expect(delivered, "\(name) was delivered")
        return operation
    }

    /// What a worker's lock section does with the front operation: pop it, count it executing.
    static func claimFront(_ core: inout QueueCore) -> Operation? {
        guard core.mayStartAnother, let operation = core.popReady() else { return nil }
        _ = core.operationClaimed()
        return operation
    }

    @Test("the limit is converted once: -1 is the default, a count is exact, below -1 is refused")
    func limitConversion() {
        #expect(ConcurrencyLimit(maxConcurrentOperationCount: -1) == .systemDefault)
        #expect(ConcurrencyLimit(maxConcurrentOperationCount: 0) == .exactly(0))
        #expect(ConcurrencyLimit(maxConcurrentOperationCount: 3) == .exactly(3))
        #expect(ConcurrencyLimit(maxConcurrentOperationCount: -2) == nil)
        #expect(ConcurrencyLimit.systemDefault.maxConcurrentOperationCount == -1)
        #expect(ConcurrencyLimit.systemDefault.executions == Int.max)
        #expect(ConcurrencyLimit.systemDefault.growsWhenBlocked && !ConcurrencyLimit.exactly(4).growsWhenBlocked)
        #expect(ConcurrencyLimit.exactly(1).isSerial && !ConcurrencyLimit.exactly(2).isSerial)
        var main = QueueCore(isMain: true)
        let (serial, grows) = (main.isSerial, main.growsWhenBlocked)
        #expect(main.limit == .exactly(1) && serial && !grows)
        main.setLimit(.systemDefault)
        let (workers, growsNow) = (main.workerLimit, main.growsWhenBlocked)
        #expect(workers == 1 && !growsNow, "the main queue runs one operation at a time whatever is set")
    }

    @Test("with a limit of 2, three ready operations get two workers, and the third starts once one finishes")
    func explicitLimit() {
        var core = QueueCore(isMain: false)
        core.setLimit(.exactly(2))
        let operations = ["a", "b", "c"].map { Self.admitReady(&core, $0) }
        let wakeup = core.wakeup()
        #expect(wakeup.workers.count == 2)
        #expect(wakeup.workers.allSatisfy { $0.sharedToken == nil }, "a BlockOperation may block: lanes' workers")
        #expect(Self.claimFront(&core) === operations[0])
        #expect(Self.claimFront(&core) === operations[1])
        #expect(Self.claimFront(&core) == nil, "two execute: the limit holds")
        #expect(core.executing == 2 && core.ready.count == 1)
        let departure = core.operationFinished(operations[0], releasesSlot: true, leaves: true)
        #expect(departure.waiters.isEmpty && departure.released.isEmpty)
        #expect(core.executing == 1 && core.members.count == 2)
        let after = core.wakeup()
        #expect(after.workers.isEmpty, "both workers still run: the one that finished takes the next")
        #expect(Self.claimFront(&core) === operations[2])
    }

    @Test("a suspended queue starts no worker, and its resumption returns what was left for it, each gated operation once")
    func suspension() {
        var core = QueueCore(isMain: false)
        _ = core.setSuspended(true)
        let operation = Self.admitReady(&core, "held")
        let suspendedWakeup = core.wakeup()
        #expect(suspendedWakeup.workers.isEmpty)
        let mayStart = core.mayStartAnother
        #expect(!mayStart)
        let gated = BlockOperation {}
        let first = core.mayConsultGates(of: gated), second = core.mayConsultGates(of: gated)
        #expect(!first && !second)
        let ran = Atomic(0)
        let deferred = core.deferUntilResumed { ran.add(1, ordering: .relaxed) }
        #expect(deferred)
        #expect(core.suspension.gatedCount == 1)
        let left = core.setSuspended(false)
        #expect(left.gated.count == 1 && left.gated[0] === gated)
        for action in left.actions { action() }
        #expect(ran.load(ordering: .relaxed) == 1)
        let deferredWhileRunning = core.deferUntilResumed {}
        #expect(!deferredWhileRunning, "a running queue keeps nothing for a resumption")
        let consults = core.mayConsultGates(of: gated)
        #expect(consults)
        let wakeup = core.wakeup()
        #expect(wakeup.workers.count == 1)
        #expect(Self.claimFront(&core) === operation)
    }

    @Test("a cancelled operation added after a barrier is held until the barrier finishes, then released")
    func barrierHoldsLaterOperations() {
        var core = QueueCore(isMain: false)
        let barrier = BlockOperation {}
        let barrierDelivered = core.admitted(barrier, readyIn: nil, sequence: nil)
        #expect(!barrierDelivered)
        core.barrierAdmitted(barrier)
        let pending = core.pendingBarrier
        #expect(pending === barrier)
        let later = BlockOperation {}
        let laterDelivered = core.admitted(later, readyIn: nil, sequence: nil)
        #expect(!laterDelivered)
        core.deliver(later, priority: .normal)
        #expect(core.ready.count == 0, "held behind the barrier")
        core.deliver(barrier, priority: .normal)
        #expect(Self.claimFront(&core) === barrier)
        let departure = core.operationFinished(barrier, releasesSlot: true, leaves: true)
        #expect(departure.released.count == 1 && departure.released.first === later)
        let pendingAfter = core.pendingBarrier
        #expect(pendingAfter == nil)
    }

    @Test("waits for emptiness end when the last member leaves; those for all but n when n remain; announcing members count")
    func emptinessWaits() {
        var core = QueueCore(isMain: false)
        let a = Self.admitReady(&core, "a"), b = Self.admitReady(&core, "b")
        let woken = Atomic(0)
        core.addWaiter(.hook(id: 1) { woken.add(1, ordering: .relaxed) }, allBut: 0)
        core.addWaiter(.hook(id: 2) { woken.add(10, ordering: .relaxed) }, allBut: 1)
        #expect(core.waits.count == 2)
        _ = Self.claimFront(&core)
        var departure = core.operationFinished(a, releasesSlot: true, leaves: true, announcing: true)
        #expect(departure.waiters.isEmpty, "a still counts while its observers are told")
        let counted = core.membersForWaits
        #expect(counted == 2)
        let due = core.finishAnnounced()
        for waiter in due { waiter.wake() }
        #expect(woken.load(ordering: .relaxed) == 10, "one member remains: the wait for all but one ends")
        _ = Self.claimFront(&core)
        departure = core.operationFinished(b, releasesSlot: true, leaves: true)
        for waiter in departure.waiters { waiter.wake() }
        #expect(woken.load(ordering: .relaxed) == 11)
        #expect(core.waits.count == 0)
    }

    @Test("a slot freed while none is executing stops the process, naming the event", .oneExitTestAtATime)
    func slotCounterUnderflow() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var core = QueueCore(isMain: false)
            _ = core.claimedOperationParked()
        }.map { $0.standardErrorContent.containsText("freed a slot", "claimedOperationParked", "no operation was executing") }.check()
    }

    @Test("a finish announced while none was being announced stops the process, naming the event", .oneExitTestAtATime)
    func announcementCounterUnderflow() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var core = QueueCore(isMain: false)
            _ = core.finishAnnounced()
        }.map { $0.standardErrorContent.containsText("announcementEnded", "none was being announced") }.check()
    }
}
