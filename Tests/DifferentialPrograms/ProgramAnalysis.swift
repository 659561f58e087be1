/// Facts read off a whole program, for the test's filters.
extension Program {
    /// Operations something may cancel before they start: a driver `cancel()`, a
    /// `cancelAllOperations()` after they were added, or the work of an operation they depend on.
    public var operationsCancelledBeforeStarting: Set<Int> {
        var result = Set<Int>()
        var added = Set<Int>()
        for step in steps {
            switch step {
            case .add(let index), .addBlock(let index): added.insert(index)
            case .addBatch(let indices, _): added.formUnion(indices)
            case .cancel(let index): result.insert(index)
            case .cancelAllOperations: result.formUnion(added)
            default: break
            }
        }
        for operation in operations { result.formUnion(operation.cancelsInWork) }
        return result
    }

    /// Operations added after a barrier was.
    public var operationsAddedAfterABarrier: Set<Int> {
        var result = Set<Int>()
        var barrierSeen = false
        for step in steps {
            switch step {
            case .addBarrier: barrierSeen = true
            case .add(let index), .addBlock(let index): if barrierSeen { result.insert(index) }
            case .addBatch(let indices, _): if barrierSeen { result.formUnion(indices) }
            default: break
            }
        }
        return result
    }

    /// The numbers (from 1) of the `.checkpoint` steps taken while a barrier may be in the queue:
    /// one was added since the last `waitUntilAllOperationsAreFinished()`.
    public var checkpointsWithPendingBarrier: Set<Int> {
        var result = Set<Int>()
        var barrierPending = false
        for (offset, step) in steps.enumerated() {
            switch step {
            case .addBarrier: barrierPending = true
            case .waitUntilAllOperationsAreFinished: barrierPending = false
            case .checkpoint: if barrierPending { result.insert(offset + 1) }
            default: break
            }
        }
        return result
    }
}
