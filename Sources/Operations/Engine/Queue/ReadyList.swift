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
/// escalation) is taken out and filed again: every operation in the list knows its place
/// (``ReadyPlace``: the one before it in its FIFO, or its index in its heap), so taking it
/// out costs O(1) from a FIFO and O(log n) from a heap. Nothing is left behind: the list
/// holds an operation only while it is ready, never one that ran.
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
                operation._readyPlace = .first
                head = operation
                self.tail = Unmanaged.passUnretained(operation)
                return
            }
            if tail._withUnsafeGuaranteedRef({ $0._addSequence < sequence }) {
                operation._readyPlace = ReadyPlace(after: tail)
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
            if let head { head._readyPlace = .first } else { tail = nil }
            return operation
        }

        /// Whether `operation` is this band's head or tail (its FIFO's ends).
        func endsWith(_ operation: Operation) -> Bool {
            head === operation || tail?.toOpaque() == Unmanaged.passUnretained(operation).toOpaque()
        }

        /// Takes out `operation`, at `index` of the heap, if it is there.
        mutating func removeFromHeap(_ operation: Operation, at index: Int) -> Bool {
            guard heap.holds(at: index, where: { $0.operation === operation }) else { return false }
            _ = heap.remove(at: index)
            return true
        }

        /// Takes `operation` out of the FIFO; `previous` is the one before it (nil: it is
        /// the head). The caller holds `operation`: the list's reference to it goes here.
        mutating func unlink(_ operation: Operation, after previous: Unmanaged<Operation>?) {
            let next = operation._nextReady.take()
            if let next {
                next._readyPlace = previous.map(ReadyPlace.init(after:)) ?? .first
            } else {
                tail = previous
            }
            if let previous { previous._withUnsafeGuaranteedRef { $0._nextReady = next } } else { head = next }
        }
    }

    /// An operation that became ready out of add order. It keeps its index in the heap in
    /// its place (`placed(at:)`), so that it can be taken out of the heap's middle.
    private struct ByAddOrder: HeapElement {
        let operation: Operation

        func goesBefore(_ other: ByAddOrder) -> Bool { operation._addSequence < other.operation._addSequence }

        func placed(at index: Int) { operation._readyPlace = ReadyPlace(heapIndex: index) }
    }

    /// Indexed by priority level, lowest first.
    private var bands = [Band](repeating: Band(), count: 5)
    /// The operations in the list.
    private(set) var count = 0

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
        bands[Self.level(of: priority)].push(operation)
    }

    /// Moves `operation` to the band of `priority` if it is in the list; it keeps its place
    /// in the order added.
    mutating func move(_ operation: Operation, to priority: Operation.QueuePriority) {
        guard remove(operation) else { return }
        push(operation, priority: priority)
    }

    /// Takes `operation` out of the list; false when it is not in it. O(1) from a FIFO,
    /// O(log n) from a heap.
    @discardableResult
    mutating func remove(_ operation: Operation) -> Bool {
        guard operation._isFiledReady else { return false }
        let place = operation._readyPlace
        if let index = place.heapIndex {
            var removed = false
            for level in bands.indices where !removed {
                removed = bands[level].removeFromHeap(operation, at: index)
            }
            precondition(removed, "Operations: a ready operation's heap index \(index) is in no band")
        } else {
            let previous = place.previous
            // Only at an end of its FIFO does the band itself change; in the middle, the
            // neighbours are all there is to change, and any band's `unlink` does that.
            let level = bands.indices.first { bands[$0].endsWith(operation) } ?? 0
            bands[level].unlink(operation, after: previous)
        }
        count -= 1
        operation._isFiledReady = false
        return true
    }

    /// The operation `pop()` would return, left in the list.
    func peek() -> Operation? {
        guard count > 0, let level = frontLevel else { return nil }
        return bands[level].first
    }

    /// The operation added first of the highest priority band.
    mutating func pop() -> Operation? {
        guard count > 0 else { return nil }
        guard let level = frontLevel else {
            preconditionFailure("Operations: the ready list counts \(count) operations and holds none")
        }
        count -= 1
        let operation = bands[level].popFirst()
        operation?._isFiledReady = false
        return operation
    }

    /// The highest band that holds an operation.
    private var frontLevel: Int? {
        var level = 4
        while level >= 0, bands[level].isEmpty { level -= 1 }
        return level >= 0 ? level : nil
    }
}

/// Where an operation is in its queue's ready list, in one word (it is in every operation):
/// after `previous` in its band's FIFO (nil: at the head), or at `heapIndex` in its band's
/// heap. Read only while the operation is in the list (`_isFiledReady`): then `previous` is
/// in the list too.
struct ReadyPlace {
    /// A heap index `i` is `i << 1 | 1`; otherwise the address of the previous operation
    /// (objects are aligned, so its low bit is 0), or 0 at the head.
    private var bits: UInt

    static let first = ReadyPlace(bits: 0)

    private init(bits: UInt) { self.bits = bits }

    init(after previous: Unmanaged<Operation>) {
        bits = UInt(bitPattern: previous.toOpaque())
    }

    init(heapIndex: Int) {
        bits = UInt(heapIndex) << 1 | 1
    }

    var heapIndex: Int? { bits & 1 == 1 ? Int(bits >> 1) : nil }

    var previous: Unmanaged<Operation>? {
        guard bits & 1 == 0, let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged.fromOpaque(pointer)
    }
}

extension Operation {
    /// The number the operation's queue gave it when it was added: operations added
    /// earlier have smaller numbers. Guarded by that queue's lock.
    ///
    /// 46 bits, stored in two fields that fill the padding after `visible` (pending memory
    /// is a target): it wraps after 2⁴⁶ operations added to one queue, some two years of
    /// a million a second. The high field's top bits are `_isFiledReady` and `_startsPromptly`.
    var _addSequence: UInt64 {
        @inline(__always) get { UInt64(_addSequenceHigh & 0x3FFF) << 32 | UInt64(_addSequenceLow) }
        @inline(__always) set {
            _addSequenceHigh = _addSequenceHigh & 0xC000 | UInt16(truncatingIfNeeded: newValue >> 32) & 0x3FFF
            _addSequenceLow = UInt32(truncatingIfNeeded: newValue)
        }
    }

    /// Its `start()` launches work and returns (it said `isAsynchronous` when added, or its
    /// body is a task): a worker on Dispatch's shared pool may start it (see
    /// `QueueCore.WorkerStart`). Set when it joins its queue; guarded by that queue's lock.
    var _startsPromptly: Bool {
        @inline(__always) get { _addSequenceHigh & 0x4000 != 0 }
        @inline(__always) set { _addSequenceHigh = newValue ? _addSequenceHigh | 0x4000 : _addSequenceHigh & ~0x4000 }
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
