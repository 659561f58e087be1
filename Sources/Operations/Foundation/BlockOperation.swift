import Synchronization

/// An operation that runs one or more closures: Foundation's `BlockOperation`.
///
/// The blocks run **concurrently** (as on Darwin; Linux's Foundation runs them one after
/// another), each on its own thread except the first, which runs on the thread that
/// called `start()`. The operation finishes, and `start()` returns, when all have returned.
/// The blocks are released once they have run.
///
/// - Note: `@unchecked Sendable`: the blocks are guarded by `blocks`' lock.
open class BlockOperation: Operation, @unchecked Sendable {
    /// One block inline (the common case: no array to allocate), or several.
    private enum Blocks {
        case none
        case one(@Sendable () -> Void)
        case many([@Sendable () -> Void])

        var all: [@Sendable () -> Void] {
            switch self {
            case .none: []
            case .one(let block): [block]
            case .many(let blocks): blocks
            }
        }

        mutating func append(_ block: @escaping @Sendable () -> Void) {
            switch self {
            case .none: self = .one(block)
            case .one(let first): self = .many([first, block])
            case .many(let blocks): self = .many(blocks + [block])
            }
        }
    }

    private let blocks = Locked<Blocks>(.none)

    /// Creates an operation with no blocks yet; add them with `addExecutionBlock(_:)`.
    public override init() {
        super.init()
    }

    /// Creates an operation that runs `block`.
    public convenience init(block: @escaping @Sendable () -> Void) {
        self.init()
        blocks.withLock { $0.append(block) }
        hasBlocks.store(true, ordering: .releasing)
    }

    /// Adds a block.
    /// - Important: Adding a block once the operation started is a programmer error.
    open func addExecutionBlock(_ block: @escaping @Sendable () -> Void) {
        // Checked and appended under the operation's lock, which `start()` takes to begin:
        // the block either runs or is refused, never dropped.
        let started = !_unlessStarted {
            blocks.withLock { $0.append(block) }
            hasBlocks.store(true, ordering: .releasing)
        }
        if started {
            Misuse.fail("addExecutionBlock: \(_misuseName) has already started; blocks can only be added before it starts")
        }
    }

    /// The blocks, until they have run.
    open var executionBlocks: [@Sendable () -> Void] { blocks.withLock { $0.all } }

    /// Whether `blocks` holds any: read without the lock when the operation finishes (the
    /// common case: `main()` already took them).
    private let hasBlocks = Atomic<Bool>(false)

    /// Releases the blocks of an operation that finished without running them (cancelled,
    /// or a subclass whose `main()` does not call `super`).
    override func _releaseWork() {
        guard hasBlocks.load(ordering: .acquiring) else { return }
        let taken = _takeBlocks()
        _ = taken
    }

    private func _takeBlocks() -> Blocks {
        blocks.withLock { blocks in
            defer {
                blocks = .none
                hasBlocks.store(false, ordering: .releasing)
            }
            return blocks
        }
    }

    open override func main() {
        let taken = _takeBlocks()
        let blocks: [@Sendable () -> Void]
        switch taken {
        case .none: return
        case .one(let block):
            block()
            return
        case .many(let all): blocks = all
        }
        let first = blocks[0]
        // Each further block gets a serial queue of its own: serial queues run on
        // Dispatch's overcommitting pool, so blocks that sleep or wait still overlap.
        let group = DispatchGroup()
        let current = OperationQueue._current.value.map { UInt(bitPattern: $0) }
        for (index, block) in blocks.enumerated().dropFirst() {
            let lane = DispatchQueue(label: "swift-operations.block.\(index)", qos: DispatchQoS(qualityOfService))
            lane.async(group: group) {
                OperationQueue._current.set(current.flatMap { UnsafeMutableRawPointer(bitPattern: $0) })
                block()
                OperationQueue._current.set(nil)
            }
        }
        first()
        group.wait()
    }
}
