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
struct ReadyList {
    private struct Band {
        /// In increasing add order.
        var head: Operation?
        /// `Unmanaged`: the chain from `head` holds every operation of the FIFO, the tail
        /// included, as long as it is in the list (and the queue's lock is held).
        var tail: Unmanaged<Operation>?
        /// The operations that came out of order: a min-heap by add order.
        var heap: [Operation] = []

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
                heap.append(operation)
                siftUp(heap.count - 1)
            }
        }

        /// Whether the heap's top was added before the FIFO's head.
        private var heapGoesFirst: Bool {
            guard let top = heap.first else { return false }
            guard let head else { return true }
            return top._addSequence < head._addSequence
        }

        var first: Operation? { heapGoesFirst ? heap[0] : head }

        mutating func popFirst() -> Operation? {
            if heapGoesFirst { return popHeap() }
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
            guard let index = heap.firstIndex(where: { $0 === operation }) else { return false }
            heap.swapAt(index, heap.count - 1)
            heap.removeLast()
            if index < heap.count {
                siftDown(index)
                siftUp(index)
            }
            return true
        }

        private mutating func popHeap() -> Operation {
            heap.swapAt(0, heap.count - 1)
            let operation = heap.removeLast()
            if !heap.isEmpty { siftDown(0) }
            return operation
        }

        private mutating func siftUp(_ start: Int) {
            var index = start
            while index > 0 {
                let parent = (index - 1) / 2
                guard heap[index]._addSequence < heap[parent]._addSequence else { return }
                heap.swapAt(index, parent)
                index = parent
            }
        }

        private mutating func siftDown(_ start: Int) {
            var index = start
            while true {
                let left = 2 * index + 1
                guard left < heap.count else { return }
                let right = left + 1
                let child = right < heap.count && heap[right]._addSequence < heap[left]._addSequence ? right : left
                guard heap[child]._addSequence < heap[index]._addSequence else { return }
                heap.swapAt(index, child)
                index = child
            }
        }
    }

    /// Indexed by priority level, lowest first.
    private var bands = [Band](repeating: Band(), count: 5)
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
        bands[Self.level(of: priority)].push(operation)
        count += 1
    }

    /// Removes a given operation; false when it is not in the list. O(n) in its band:
    /// only for undoing a refused batch and for refiling an operation whose band changed.
    @discardableResult
    mutating func remove(_ operation: Operation) -> Bool {
        for level in bands.indices where bands[level].remove(operation) {
            count -= 1
            return true
        }
        return false
    }

    /// The operation `pop()` would return, left in the list.
    func peek() -> Operation? {
        guard count > 0 else { return nil }
        var level = 4
        while bands[level].isEmpty { level -= 1 }
        return bands[level].first
    }

    /// The operation added first of the highest priority band.
    mutating func pop() -> Operation? {
        guard count > 0 else { return nil }
        var level = 4
        while bands[level].isEmpty { level -= 1 }
        count -= 1
        return bands[level].popFirst()
    }
}

extension Operation {
    /// The number the operation's queue gave it when it was added: operations added
    /// earlier have smaller numbers. Guarded by that queue's lock.
    ///
    /// 48 bits, stored in two fields that fill the padding after `visible` (pending memory
    /// is a target): it wraps after 2⁴⁸ operations added to one queue, some nine years of
    /// a million a second.
    var _addSequence: UInt64 {
        @inline(__always) get { UInt64(_addSequenceHigh) << 32 | UInt64(_addSequenceLow) }
        @inline(__always) set {
            _addSequenceHigh = UInt16(truncatingIfNeeded: newValue >> 32)
            _addSequenceLow = UInt32(truncatingIfNeeded: newValue)
        }
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
