/// The scheduling state of one `OperationQueue`, guarded by the queue's lock.
///
/// Workers are Dispatch work items that each drain ready operations in a loop, so a burst
/// of small operations costs a few Dispatch hops, not one per operation. A worker holds
/// a slot (0..<64) for as long as it runs; the slot names the serial Dispatch "lane" it
/// runs on and the lane of a timeline. The number of operations started and not finished
/// (`executing`) is what `maxConcurrentOperationCount` bounds; an asynchronous operation
/// keeps its slot in that count after its worker moved on.
struct QueueCore {
    // Every field is changed through a method of this file; `pool` and `producers` keep
    // their own fields `private(set)` and change them through their own methods.
    private(set) var ready = ReadyList()
    private(set) var members = MemberList()
    private(set) var executing = 0
    /// The workers, their slots and lanes, and the watchdog's view of them.
    var pool = WorkerPool()
    private(set) var maxConcurrent: Int
    private(set) var isSuspended = false
    let isMain: Bool
    /// Counts operations finishing; the watchdog compares it to see whether workers progress
    /// (starts do not count: a worker that just started an operation may block in it).
    private(set) var progressStamp: UInt64 = 0
    /// Waiting for the queue to become empty (`waitUntilAllOperationsAreFinished`).
    private(set) var waiters: [QueueWaiter] = []
    /// Operations that left and whose `isFinished` observers are being told: until they
    /// have been, the queue is not empty for its waits (a wait returns after the observers).
    private(set) var finishesBeingAnnounced = 0
    /// Waiting for all but `remaining` members to leave (a wait from completion blocks of
    /// members, which leave only when their blocks return).
    private(set) var waitersForAllBut: [(remaining: Int, waiter: QueueWaiter)] = []
    /// The bound on unfinished operations that `enqueue` respects (back-pressure), and the
    /// producers waiting under it.
    private(set) var producers = ProducerAdmission()
    /// The newest barrier not yet finished: operations added after it wait for it.
    private(set) var pendingBarrier: Operation?
    /// The number the next operation added gets (``Operation/_addSequence``).
    private(set) var nextSequence: UInt64 = 0
    /// The barriers not yet finished, oldest first (see `BarrierGate`).
    private(set) var barrierGates: [BarrierGate] = []
    /// Operations that became ready (cancelled ones) while a barrier added before them had
    /// not run: they go to the ready list once it has, in the band they have then.
    private(set) var heldBehindBarrier: [Operation] = []
    /// Operations whose gates were due while the queue was suspended: consulted when it
    /// resumes (a category is not taken, nor a condition evaluated, for work that cannot start).
    private(set) var gatedWhileSuspended: [Operation] = []
    /// The identities in `gatedWhileSuspended`: each is kept once, however many times its
    /// gates were found due.
    private(set) var gatedWhileSuspendedIDs: Set<ObjectIdentifier> = []
    /// What gates asked to be told of the resumption, having found the queue suspended
    /// while they were deciding (`deferUntilResumed`): run when it resumes, in that order.
    private(set) var actionsOnResumption: [@Sendable () -> Void] = []
    private(set) var name: String?
    private(set) var qualityOfService: QualityOfService
    /// Whether `qualityOfService` was set: only then do operations made from blocks take it.
    private(set) var isQualityOfServiceSet = false

    /// What the queue's threads run at: the quality of service set, else `.default` (the
    /// getter reports `.background`, as Apple documents, but a queue nobody gave one runs at
    /// the default thread priority: nice 0 on Linux, not 10).
    var threadQualityOfService: QualityOfService {
        isQualityOfServiceSet || isMain ? qualityOfService : .default
    }
    private(set) var underlyingQueue: DispatchQueue?
    /// Where the worker for the shared pool is queued instead of Dispatch's pool (tests
    /// put a suspended queue here to see what happens when the pool never begins it).
    var sharedPoolForTests: DispatchQueue?

    init(isMain: Bool) {
        self.isMain = isMain
        maxConcurrent = isMain ? 1 : OperationQueue.defaultMaxConcurrentOperationCount
        qualityOfService = isMain ? .userInteractive : .background
    }

    var executionLimit: Int { maxConcurrent < 0 ? Int.max : maxConcurrent }

    // MARK: Settings

    mutating func setName(_ name: String?) {
        self.name = name
    }

    /// A change affects only operations not yet started.
    mutating func setMaxConcurrent(_ limit: Int) {
        maxConcurrent = limit
    }

    /// What a resumption leaves to do after the lock.
    struct Resumption {
        /// The actions of gates that were deciding when the queue was suspended, to run first.
        var actions: [@Sendable () -> Void] = []
        /// The operations whose gates were due meanwhile, to consult.
        var gated: [Operation] = []
    }

    /// Returns, on resuming, what was left for the resumption: the caller runs and
    /// consults it after the lock.
    mutating func setSuspended(_ suspended: Bool) -> Resumption {
        isSuspended = suspended
        guard !suspended else { return Resumption() }
        let resumption = Resumption(actions: actionsOnResumption, gated: gatedWhileSuspended)
        actionsOnResumption = []
        gatedWhileSuspended = []
        gatedWhileSuspendedIDs = []
        return resumption
    }

    /// Whether the queue is suspended; if it is, `action` is kept for the resumption
    /// (`setSuspended`).
    mutating func deferUntilResumed(_ action: @escaping @Sendable () -> Void) -> Bool {
        guard isSuspended else { return false }
        actionsOnResumption.append(action)
        return true
    }

    /// Whether `operation`'s gates may be consulted now: not while the queue is suspended;
    /// then it is kept (once) for the resumption (`setSuspended`).
    mutating func mayConsultGates(of operation: Operation) -> Bool {
        guard isSuspended else { return true }
        if gatedWhileSuspendedIDs.insert(ObjectIdentifier(operation)).inserted {
            gatedWhileSuspended.append(operation)
        }
        return false
    }

    /// Operations made from blocks take it from now on; new workers run on lanes of it.
    mutating func setQualityOfService(_ quality: QualityOfService) {
        qualityOfService = quality
        isQualityOfServiceSet = true
        pool.dropLanes()
    }

    mutating func setUnderlyingQueue(_ queue: DispatchQueue?) {
        underlyingQueue = queue
    }

    var workerLimit: Int {
        if isMain { return 1 }
        if maxConcurrent < 0 { return pool.grownLimit }
        return min(maxConcurrent, WorkerPool.maximum)
    }

    // MARK: Admission

    enum Refusal {
        case inThisQueue
        /// In another queue (named when the operation still is in it).
        case inAnotherQueue(OperationQueue?)
        /// Listed twice in one `addOperations` batch.
        case twiceInBatch
        case executing, finished
    }

    /// What was read of an operation before the lock (its getters may be user code): the
    /// readiness generation, then what `isReady`, `isExecuting` and `isFinished` said.
    struct Reading {
        var generation: UInt32
        var isReady: Bool
        var isExecuting: Bool
        var isFinished: Bool
        /// What `isAsynchronous` said: its `start()` launches work and returns.
        var isAsynchronous: Bool

        /// An operation the queue just made itself: nobody else has seen it.
        static let fresh = Reading(generation: 0, isReady: true, isExecuting: false, isFinished: false, isAsynchronous: false)
    }

    enum Admission {
        case refused(Refusal)
        /// Added; `delivered` when it went straight into the ready list.
        case admitted(delivered: Bool)
    }

    /// What an operation joining this queue takes from it (see `OperationCore.join`): the
    /// queue's quality of service when asked for and set, and whether the queue is serial.
    func joinTerms(inheritQoS: Bool) -> OperationCore.JoinTerms {
        OperationCore.JoinTerms(quality: inheritQoS && isQualityOfServiceSet ? qualityOfService : nil, serial: isSerial)
    }

    /// An operation joined the queue (`OperationCore.join`, under its own lock): numbers it
    /// (`sequence`, or the next number), lists it, and files it when it is ready (`readyIn`,
    /// its band). Returns whether it was delivered: filed, or held behind a barrier.
    mutating func admitted(_ operation: Operation, readyIn priority: Operation.QueuePriority?, sequence: UInt64?) -> Bool {
        if let sequence {
            operation._addSequence = sequence
        } else {
            operation._addSequence = nextSequence
            nextSequence += 1
        }
        members.append(operation)
        guard let priority else { return false }
        deliver(operation, priority: priority)
        return true
    }

    /// Undoes `admitted` for an operation of a batch that is being refused (its own state is
    /// undone by `OperationCore.unjoin`).
    mutating func unadmitted(_ operation: Operation, wasDelivered: Bool) {
        members.remove(operation)
        if wasDelivered, !ready.remove(operation) {
            heldBehindBarrier.removeAll { $0 === operation }
        }
    }

    /// A serial queue: priorities do not come from quality of service there.
    var isSerial: Bool { isMain || maxConcurrent == 1 }

    // MARK: Ready operations and barriers

    /// A barrier that has not finished, and where it stands in the order added: every
    /// operation numbered from `firstSequenceAfter` on, but the barrier, was added after it.
    /// (Numbered when the barrier was announced, before it was added: an operation added
    /// by another thread in between waits for the barrier too.)
    struct BarrierGate {
        var barrier: ObjectIdentifier
        var firstSequenceAfter: UInt64
    }

    /// `addBarrierBlock`: `barrier` was admitted (held: one dependency more, until the
    /// caller has made it wait for the members before it) and becomes the one that
    /// operations added from now on wait for. Admission and this happen under one lock,
    /// so that nothing added by another thread can come between (an operation or a
    /// barrier added in between would order the two barriers both ways: a cycle).
    mutating func barrierAdmitted(_ barrier: Operation) {
        pendingBarrier = barrier
        barrierGates.append(BarrierGate(barrier: ObjectIdentifier(barrier), firstSequenceAfter: nextSequence))
    }

    /// Whether `operation` was added after a barrier that has not finished.
    ///
    /// Only a cancelled operation can be ready then (the others wait for the barrier as a
    /// dependency, which a cancelled one ignores): it does not start, not even for its
    /// cancelled pass through `start()`, until the barrier has run.
    private func isBehindBarrier(_ operation: Operation) -> Bool {
        guard let gate = barrierGates.first else { return false }
        return operation._addSequence >= gate.firstSequenceAfter && ObjectIdentifier(operation) != gate.barrier
    }

    /// Puts an operation that became ready into the ready list, or holds it while a barrier
    /// added before it has not run.
    mutating func deliver(_ operation: Operation, priority: Operation.QueuePriority) {
        if !barrierGates.isEmpty, isBehindBarrier(operation) {
            heldBehindBarrier.append(operation)
        } else {
            ready.push(operation, priority: priority)
        }
    }

    /// `operation` finished: if it is a barrier, returns the operations it held back, for
    /// the caller to `deliver` in the bands they have now (read under their locks).
    private mutating func barrierMayHaveFinished(_ operation: Operation) -> [Operation] {
        guard let index = barrierGates.firstIndex(where: { $0.barrier == ObjectIdentifier(operation) }) else { return [] }
        barrierGates.remove(at: index)
        defer { heldBehindBarrier = [] }
        return heldBehindBarrier
    }

    // MARK: Claims

    /// Takes the first ready operation off the list.
    mutating func popReady() -> Operation? {
        ready.pop()
    }

    /// The first ready operation, left in the list.
    func peekReady() -> Operation? {
        ready.peek()
    }

    /// The popped operation was claimed (its state took `.claim`): it counts as executing.
    /// Returns the stamp to arm the watchdog with, when it must be armed.
    mutating func operationClaimed() -> UInt64? {
        executing += 1
        return armWatchdogIfBlocked()
    }

    /// An operation was claimed to start on the thread that freed a slot: it counts as
    /// executing (no worker waits, so the watchdog is not armed).
    mutating func operationClaimedInline() {
        executing += 1
    }

    /// A claimed operation was found not ready after all (its `isReady` read false) and
    /// was parked until its next readiness announcement: it no longer counts as executing.
    /// Returns the workers the freed slot allows (the claim may have been for a start on
    /// the thread that freed a slot, which no worker follows).
    mutating func claimedOperationParked() -> Wakeup {
        executing -= 1
        return wakeup()
    }

    /// Moves an operation in the ready list to the band `priority` (it keeps its place in
    /// the order added): O(1) out of a FIFO, O(log n) out of a heap. Nothing when
    /// it is not in the list (a barrier holds it: it is filed in the band it has when the
    /// barrier has run).
    mutating func refile(_ operation: Operation, to priority: Operation.QueuePriority) {
        ready.move(operation, to: priority)
    }

    // MARK: Capacity (back-pressure)

    var capacity: Int? { producers.capacity }
    var reservedPlaces: Int { producers.reservedPlaces }
    var capacityWaiters: [QueueWaiter] { producers.waiters }

    /// Returns the producers the new capacity admits, oldest first.
    mutating func setCapacity(_ capacity: Int?) -> [QueueWaiter] {
        producers.setCapacity(capacity, members: members.count)
    }

    /// Whether a producer may add now (see `ProducerAdmission.takePlace`).
    mutating func takePlace() -> Bool { producers.takePlace(members: members.count) }

    /// A producer that had a place reserved added its operation.
    mutating func reservedPlaceUsed() { producers.reservedPlaceUsed() }

    /// A producer found no place: it waits, after those already waiting.
    mutating func producerWaits(_ waiter: QueueWaiter) { producers.producerWaits(waiter) }

    /// A producer that waited gave up (see `ProducerAdmission.producerLeft`).
    mutating func producerLeft(id: UInt64) -> (removed: [QueueWaiter], admitted: [QueueWaiter]) {
        producers.producerLeft(id: id, members: members.count)
    }

    // MARK: Finishing

    /// What a finish leaves the caller to do: wake `waiters` (those waiting for the queue to
    /// become empty when it did, and producers waiting for room) after the lock, and
    /// `deliver` the operations a finished barrier `released`, under it, in their bands now,
    /// then call `departureHandled()`.
    struct Departure {
        var waiters: [QueueWaiter] = []
        var released: [Operation] = []
    }

    /// An operation of this queue finished: free its slot, and (when `leaves`) take it out.
    mutating func operationFinished(
        _ operation: Operation, releasesSlot: Bool, leaves: Bool, announcing: Bool = false
    ) -> Departure {
        var departure = Departure()
        if releasesSlot {
            executing -= 1
            progressStamp &+= 1
        }
        if !barrierGates.isEmpty { departure.released = barrierMayHaveFinished(operation) }
        if leaves {
            members.remove(operation)
            if operation === pendingBarrier { pendingBarrier = nil }
            if announcing { finishesBeingAnnounced += 1 }
            departure.waiters = waitsForEmptiness()
            if !producers.waiters.isEmpty { departure.waiters += producers.producersToAdmit(members: members.count) }
        }
        return departure
    }

    /// A finish was handled (`operationFinished`, then the delivery of what it released):
    /// when nothing runs or is ready, the workers' allowance falls back to the processors.
    mutating func departureHandled() {
        if executing == 0 && ready.count == 0 { pool.resetGrowth() }
    }

    /// The members that count for the waits: the operations in the queue, and those that
    /// left whose `isFinished` observers are being told.
    var membersForWaits: Int { members.count + finishesBeingAnnounced }

    /// The waits that end now that fewer operations count for them.
    private mutating func waitsForEmptiness() -> [QueueWaiter] {
        var waitersToWake: [QueueWaiter] = []
        let count = membersForWaits
        if count == 0 {
            waitersToWake = waiters
            waiters = []
        }
        if !waitersForAllBut.isEmpty {
            waitersToWake += waitersForAllBut.lazy.filter { count <= $0.remaining }.map(\.waiter)
            waitersForAllBut.removeAll { count <= $0.remaining }
        }
        return waitersToWake
    }

    /// `waiter` waits until at most `remaining` operations count for the waits (see
    /// `membersForWaits`): 0 to wait for the queue to become empty.
    mutating func addWaiter(_ waiter: QueueWaiter, allBut remaining: Int) {
        if remaining == 0 {
            waiters.append(waiter)
        } else {
            waitersForAllBut.append((remaining, waiter))
        }
    }

    /// A task waiting for the queue to become empty was cancelled: returns its hook, for
    /// the caller to drop after the lock.
    mutating func removeWaiter(id: UInt64) -> [QueueWaiter] {
        let removed = waiters.filter { $0.hasID(id) }
        waiters.removeAll { $0.hasID(id) }
        return removed
    }

    /// The observers of an operation that left announcing its finish were told.
    mutating func finishAnnounced() -> [QueueWaiter] {
        finishesBeingAnnounced -= 1
        return waitsForEmptiness()
    }
}

extension DispatchQoS {
    init(_ quality: QualityOfService) {
        switch quality {
        case .userInteractive: self = .userInteractive
        case .userInitiated: self = .userInitiated
        case .utility: self = .utility
        case .background: self = .background
        default: self = .default
        }
    }
}
