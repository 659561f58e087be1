/// The ready operations of one queue: the highest priority band first, and within a band
/// the operation added first (its queue numbers operations as they are added, see
/// ``Operation/_addSequence``). Guarded by the queue's lock.
///
/// Why a FIFO and a heap per band: operations mostly become ready in the order they were
/// added (ready when added, a serial stream, a chain), so each band keeps a FIFO of
/// operations in increasing add order, linked through the operations themselves
/// (`_nextReady`): appending one numbered above the tail is O(1) and allocates nothing.
/// One that became ready after a later-added operation of its band (a dependency
/// finished late) goes to the band's binary min-heap instead, O(log n). The band's next
/// operation is the earlier of the FIFO's head and the heap's top.
///
/// References move rather than being copied (`take()`), and the tails are unretained:
/// the links are on the path of every operation, and each copied reference costs a
/// retain and a release. An operation outside the list has a nil `_nextReady` (`pop`
/// and `remove` clear it), so `push` need not.
///
/// An operation whose band changes while it waits (its `queuePriority` set, or raised by
/// escalation) is *moved*, not taken out: taking it out of a singly linked FIFO would cost
/// O(n). It goes to one more heap, ordered by band and then add order, and its entry in
/// the band stays behind, stale, until it reaches the front and is dropped; a side table
/// (only for moved operations, so the common path never looks at it) tells stale entries
/// from live ones. A move costs O(log m) for m moved operations.
struct ReadyList {
    private struct Band {
        /// In increasing add order.
        var head: Operation?
        /// `Unmanaged`: the chain from `head` holds every operation of the FIFO, the tail
        /// included, as long as it is in the list (and the queue's lock is held).
        var tail: Unmanaged<Operation>?
        /// The operations that came out of order, by add order.
        var heap = Heap<ByAddOrder>()

        var isEmpty: Bool { head == nil && heap.isEmpty }

        mutating func push(_ operation: Operation) {
            let sequence = operation._addSequence
            guard let tail else {
                head = operation
                self.tail = Unmanaged.passUnretained(operation)
                return
            }
            if tail._withUnsafeGuaranteedRef({ $0._addSequence < sequence }) {
                tail._withUnsafeGuaranteedRef { $0._nextReady = operation }
                self.tail = Unmanaged.passUnretained(operation)
            } else {
                heap.insert(ByAddOrder(operation: operation))
            }
        }

        /// Whether the heap's top was added before the FIFO's head.
        private var heapGoesFirst: Bool {
            guard let top = heap.first else { return false }
            guard let head else { return true }
            return top.operation._addSequence < head._addSequence
        }

        var first: Operation? { heapGoesFirst ? heap.first!.operation : head }

        mutating func popFirst() -> Operation? {
            if heapGoesFirst { return heap.popFirst()!.operation }
            guard let operation = head.take() else { return nil }
            head = operation._nextReady.take()
            if head == nil { tail = nil }
            return operation
        }

        /// Removes `operation`; false when it is not in the band. O(n).
        mutating func remove(_ operation: Operation) -> Bool {
            var previous: Operation?
            var cursor = head
            while let current = cursor {
                if current === operation {
                    let next = current._nextReady.take()
                    if tail?.toOpaque() == Unmanaged.passUnretained(current).toOpaque() {
                        tail = previous.map(Unmanaged.passUnretained)
                    }
                    if let previous { previous._nextReady = next } else { head = next }
                    return true
                }
                previous = current
                cursor = current._nextReady
            }
            return heap.remove { $0.operation === operation } != nil
        }
    }

    /// An operation that became ready out of add order.
    private struct ByAddOrder: HeapElement {
        let operation: Operation

        func goesBefore(_ other: ByAddOrder) -> Bool { operation._addSequence < other.operation._addSequence }
    }

    /// Indexed by priority level, lowest first.
    private var bands = [Band](repeating: Band(), count: 5)
    /// Live entries: the operations a pop may return.
    private(set) var count = 0

    /// A moved operation: which of its entries in `movedHeap` is live, and whether its
    /// entry in a band (stale) is still there.
    private struct Moved {
        var generation: UInt64
        var live: Bool
        var staleInBand: Bool
    }

    private struct MovedEntry: HeapElement {
        let operation: Operation
        let level: Int
        let generation: UInt64

        /// Higher band first, then the operation added first.
        func goesBefore(_ other: MovedEntry) -> Bool {
            level != other.level ? level > other.level : operation._addSequence < other.operation._addSequence
        }
    }

    /// By operation, for moved operations only (empty on the common path).
    private var moved: [ObjectIdentifier: Moved] = [:]
    /// Live and stale entries of moved operations.
    private var movedHeap = Heap<MovedEntry>()
    private var nextGeneration: UInt64 = 0

    static func level(of priority: Operation.QueuePriority) -> Int {
        switch priority {
        case .veryLow: 0
        case .low: 1
        case .normal: 2
        case .high: 3
        case .veryHigh: 4
        }
    }

    mutating func push(_ operation: Operation, priority: Operation.QueuePriority) {
        count += 1
        operation._isFiledReady = true
        // Its stale entry still holds its link in a band: it goes with the moved ones.
        if !moved.isEmpty, moved[ObjectIdentifier(operation)] != nil {
            pushMoved(operation, level: Self.level(of: priority))
            return
        }
        bands[Self.level(of: priority)].push(operation)
    }

    /// Moves `operation` to the band of `priority` if it is in the list; it keeps its place
    /// in the order added.
    mutating func move(_ operation: Operation, to priority: Operation.QueuePriority) {
        guard operation._isFiledReady else { return }
        pushMoved(operation, level: Self.level(of: priority))
    }

    /// Files `operation` in the moved heap as its live entry; its earlier entries go stale.
    private mutating func pushMoved(_ operation: Operation, level: Int) {
        nextGeneration &+= 1
        let generation = nextGeneration
        let id = ObjectIdentifier(operation)
        if moved[id] != nil {
            moved[id]!.generation = generation
            moved[id]!.live = true
        } else {
            moved[id] = Moved(generation: generation, live: true, staleInBand: true)
        }
        movedHeap.insert(MovedEntry(operation: operation, level: level, generation: generation))
    }

    /// Removes a given operation; false when it is not in the list. O(n) in its band:
    /// only for undoing a refused batch, in the lock section that added it (so it has not
    /// been moved).
    @discardableResult
    mutating func remove(_ operation: Operation) -> Bool {
        precondition(moved[ObjectIdentifier(operation)] == nil, "Operations: a moved operation is never withdrawn")
        for level in bands.indices where bands[level].remove(operation) {
            count -= 1
            operation._isFiledReady = false
            return true
        }
        return false
    }

    /// The operation `pop()` would return, left in the list. Stale entries it passes go to
    /// `dropped`, for the caller to release after the lock.
    mutating func peek(dropping dropped: inout [Operation]) -> Operation? {
        guard count > 0 else { return nil }
        if !moved.isEmpty || !movedHeap.isEmpty { dropStale(into: &dropped) }
        switch front() {
        case .band(let level): return bands[level].first
        case .moved: return movedHeap.first!.operation
        case nil: return nil
        }
    }

    /// The operation added first of the highest priority band. Stale entries it passes go
    /// to `dropped`, for the caller to release after the lock.
    mutating func pop(dropping dropped: inout [Operation]) -> Operation? {
        guard count > 0 else { return nil }
        if !moved.isEmpty || !movedHeap.isEmpty { dropStale(into: &dropped) }
        switch front() {
        case .band(let level):
            count -= 1
            let operation = bands[level].popFirst()
            operation?._isFiledReady = false
            if count == 0, !movedHeap.isEmpty || !moved.isEmpty { dropAllStale(into: &dropped) }
            return operation
        case .moved:
            count -= 1
            let entry = movedHeap.popFirst()!
            entry.operation._isFiledReady = false
            let id = ObjectIdentifier(entry.operation)
            moved[id]!.live = false
            if !moved[id]!.staleInBand { moved[id] = nil }
            if count == 0 { dropAllStale(into: &dropped) }
            return entry.operation
        case nil:
            preconditionFailure("Operations: the ready list counts \(count) operations and holds none")
        }
    }

    private enum Front { case band(Int), moved }

    /// Where the next operation is, once stale entries are gone from the fronts.
    private func front() -> Front? {
        var level = 4
        while level >= 0, bands[level].isEmpty { level -= 1 }
        guard let top = movedHeap.first else { return level >= 0 ? .band(level) : nil }
        guard level >= 0, let first = bands[level].first else { return .moved }
        if top.level != level { return top.level > level ? .moved : .band(level) }
        return top.operation._addSequence < first._addSequence ? .moved : .band(level)
    }

    /// With no live entry left, every entry is stale: all go (an idle queue must not keep
    /// finished operations alive).
    private mutating func dropAllStale(into dropped: inout [Operation]) {
        for level in bands.indices {
            while let operation = bands[level].popFirst() { dropped.append(operation) }
        }
        dropped.append(contentsOf: movedHeap.takeAll().lazy.map(\.operation))
        moved = [:]
    }

    /// Drops stale entries from the front of every band and of the moved heap.
    private mutating func dropStale(into dropped: inout [Operation]) {
        for level in bands.indices {
            while let first = bands[level].first, let id = Optional(ObjectIdentifier(first)), moved[id] != nil {
                dropped.append(bands[level].popFirst()!)
                moved[id]!.staleInBand = false
                if !moved[id]!.live { moved[id] = nil }
            }
        }
        while let top = movedHeap.first {
            let state = moved[ObjectIdentifier(top.operation)]
            if let state, state.live, state.generation == top.generation { break }
            dropped.append(movedHeap.popFirst()!.operation)
        }
    }
}

extension Operation {
    /// The number the operation's queue gave it when it was added: operations added
    /// earlier have smaller numbers. Guarded by that queue's lock.
    ///
    /// 47 bits, stored in two fields that fill the padding after `visible` (pending memory
    /// is a target): it wraps after 2⁴⁷ operations added to one queue, some four years of
    /// a million a second. The high field's top bit is `_isFiledReady`.
    var _addSequence: UInt64 {
        @inline(__always) get { UInt64(_addSequenceHigh & 0x7FFF) << 32 | UInt64(_addSequenceLow) }
        @inline(__always) set {
            _addSequenceHigh = _addSequenceHigh & 0x8000 | UInt16(truncatingIfNeeded: newValue >> 32) & 0x7FFF
            _addSequenceLow = UInt32(truncatingIfNeeded: newValue)
        }
    }

    /// Whether the operation has a live entry in its queue's ready list (set by `push`,
    /// cleared by `pop` and `remove`). Guarded by that queue's lock.
    var _isFiledReady: Bool {
        @inline(__always) get { _addSequenceHigh & 0x8000 != 0 }
        @inline(__always) set { _addSequenceHigh = newValue ? _addSequenceHigh | 0x8000 : _addSequenceHigh & 0x7FFF }
    }
}

/// The operations of one queue that have not left it, in the order added, linked through
/// the operations (`_nextMember`, `_previousMember`): O(1) to add and remove. Guarded by
/// the queue's lock.
///
/// As in `ReadyList`, references move rather than being copied, and the backward links
/// are unretained. An operation outside the list has nil links (`remove` clears them).
struct MemberList {
    private var head: Operation?
    /// `Unmanaged`: the chain from `head` holds every member, the tail included, while it
    /// is in the list (and the queue's lock is held).
    private var tail: Unmanaged<Operation>?
    private(set) var count = 0

    mutating func append(_ operation: Operation) {
        operation._previousMember = tail
        if let tail { tail._withUnsafeGuaranteedRef { $0._nextMember = operation } } else { head = operation }
        tail = Unmanaged.passUnretained(operation)
        count += 1
    }

    mutating func remove(_ operation: Operation) {
        let next = operation._nextMember.take()
        let previous = operation._previousMember.take()
        if let next { next._previousMember = previous } else { tail = previous }
        // Drops the list's reference to `operation` (the caller holds another).
        if let previous { previous._withUnsafeGuaranteedRef { $0._nextMember = next } } else { head = next }
        count -= 1
    }

    var all: [Operation] {
        var result: [Operation] = []
        result.reserveCapacity(count)
        var cursor = head
        while let operation = cursor {
            result.append(operation)
            cursor = operation._nextMember
        }
        return result
    }
}
