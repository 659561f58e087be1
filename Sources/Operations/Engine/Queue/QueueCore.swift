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
    /// Operations started and not finished: what `limit` bounds.
    private(set) var executing = 0
    /// The workers, their slots and lanes, and the watchdog's view of them.
    var pool = WorkerPool()
    private(set) var limit: ConcurrencyLimit
    private(set) var suspension = QueueSuspension.running
    let isMain: Bool
    /// Counts operations finishing; the watchdog compares it to see whether workers progress
    /// (starts do not count: a worker that just started an operation may block in it).
    private(set) var progressStamp: UInt64 = 0
    /// Who waits for the queue to become empty.
    private(set) var waits = EmptinessWaits()
    /// The bound on unfinished operations that `enqueue` respects (back-pressure), and the
    /// producers waiting under it.
    private(set) var producers = ProducerAdmission()
    /// The barriers not yet finished, and the operations they hold back.
    private(set) var barriers = QueueBarriers()
    /// The number the next operation added gets (``Operation/_addSequence``).
    private(set) var nextSequence: UInt64 = 0
    private(set) var name: String?
    private(set) var qualityOfService: QualityOfService
    /// Whether `qualityOfService` was set: only then do operations made from blocks take it.
    private(set) var isQualityOfServiceSet = false

    /// What the queue's threads run at: the quality of service set, else `.default` (the
    /// getter reports `.background`, as Apple documents, but a queue nobody gave one runs at
    /// the default thread priority: nice 0 on Linux, not 10).
    var threadQualityOfService: QualityOfService {
        mutating get {
            isQualityOfServiceSet || isMain ? qualityOfService : .default
        }
    }
    private(set) var underlyingQueue: DispatchQueue?
    /// Where the worker for the shared pool is queued instead of Dispatch's pool (tests
    /// put a suspended queue here to see what happens when the pool never begins it).
    var sharedPoolForTests: DispatchQueue?

    init(isMain: Bool) {
        self.isMain = isMain
        limit = isMain ? .exactly(1) : .systemDefault
        qualityOfService = isMain ? .userInteractive : .background
    }

    var isSuspended: Bool { mutating get { suspension.isSuspended } }

    /// The newest barrier not yet finished: operations added after it wait for it.
    var pendingBarrier: Operation? { mutating get { barriers.pending } }

    // MARK: Settings

    mutating func setName(_ name: String?) {
        self.name = name
    }

    /// A change affects only operations not yet started.
    mutating func setLimit(_ limit: ConcurrencyLimit) {
        self.limit = limit
    }

    /// Returns, on resuming, what was left for the resumption: the caller runs and
    /// consults it after the lock.
    mutating func setSuspended(_ suspended: Bool) -> QueueSuspension.LeftForResumption {
        guard !suspended else {
            suspension.suspend()
            return QueueSuspension.LeftForResumption()
        }
        return suspension.resume()
    }

    /// Whether the queue is suspended; if it is, `action` is kept for the resumption
    /// (`setSuspended`).
    mutating func deferUntilResumed(_ action: @escaping @Sendable () -> Void) -> Bool {
        suspension.deferUntilResumed(action)
    }

    /// Whether `operation`'s gates may be consulted now: not while the queue is suspended;
    /// then it is kept (once) for the resumption (`setSuspended`).
    mutating func mayConsultGates(of operation: Operation) -> Bool {
        !suspension.keepGated(operation)
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
        mutating get {
            if isMain { return 1 }
            switch limit {
            case .systemDefault: return pool.grownLimit
            case .exactly(let count): return min(count, WorkerPool.maximum)
            }
        }
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
    mutating func joinTerms(inheritQoS: Bool) -> OperationCore.JoinTerms {
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
        if wasDelivered, !ready.remove(operation), !barriers.release(operation) {
            preconditionFailure("Operations: \(operation) was undone (event: unadmitted) as delivered but was neither ready nor held behind a barrier")
        }
    }

    /// A serial queue: priorities do not come from quality of service there.
    var isSerial: Bool { mutating get { isMain || limit.isSerial } }

    // MARK: Ready operations and barriers

    /// `addBarrierBlock`: `barrier` was admitted (held: one dependency more, until the
    /// caller has made it wait for the members before it) and becomes the one that
    /// operations added from now on wait for. Admission and this happen under one lock,
    /// so that nothing added by another thread can come between (an operation or a
    /// barrier added in between would order the two barriers both ways: a cycle).
    mutating func barrierAdmitted(_ barrier: Operation) {
        barriers.admitted(barrier, firstSequenceAfter: nextSequence)
    }

    /// Puts an operation that became ready into the ready list, or holds it while a barrier
    /// added before it has not run.
    mutating func deliver(_ operation: Operation, priority: Operation.QueuePriority) {
        if !barriers.isEmpty, barriers.holdsBack(operation) {
            barriers.hold(operation)
        } else {
            ready.push(operation, priority: priority)
        }
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
        slotFreed(by: "claimedOperationParked")
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
    mutating func producerLeft(id: UInt64) -> ProducerAdmission.Departure {
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
            slotFreed(by: "operationFinished")
            progressStamp &+= 1
        }
        if !barriers.isEmpty { departure.released = barriers.finished(operation) }
        if leaves {
            members.remove(operation)
            barriers.left(operation)
            if announcing { waits.announcementBegan() }
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

    /// One executing operation fewer (`event`: what freed its slot).
    private mutating func slotFreed(by event: StaticString) {
        precondition(executing > 0, "Operations: a queue freed a slot (event: \(event)) while no operation was executing")
        executing -= 1
    }

    /// The members that count for the waits: the operations in the queue, and those that
    /// left whose `isFinished` observers are being told.
    var membersForWaits: Int { mutating get { members.count + waits.finishesBeingAnnounced } }

    /// The waits that end now that fewer operations count for them.
    private mutating func waitsForEmptiness() -> [QueueWaiter] {
        waits.due(count: membersForWaits)
    }

    /// `waiter` waits until at most `remaining` operations count for the waits (see
    /// `membersForWaits`): 0 to wait for the queue to become empty.
    mutating func addWaiter(_ waiter: QueueWaiter, allBut remaining: Int) {
        waits.add(waiter, allBut: remaining)
    }

    /// A task waiting for the queue to become empty was cancelled: returns its hook, for
    /// the caller to drop after the lock.
    mutating func removeWaiter(id: UInt64) -> [QueueWaiter] {
        waits.remove(id: id)
    }

    /// The observers of an operation that left announcing its finish were told.
    mutating func finishAnnounced() -> [QueueWaiter] {
        waits.announcementEnded()
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
