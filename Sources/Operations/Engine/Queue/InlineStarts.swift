// Operations started on the thread that freed a slot, outside the queue's workers: an
// operation whose `start()` never blocks (an `async` body's) is started by the thread its
// predecessor's body ended on.

extension OperationQueue {
    /// Starts, on this thread, an operation claimed for a slot by `_operationFinished`.
    ///
    /// Such a start may finish at once (a cancelled operation, or one whose input failed),
    /// and that finish claims the next one: started from inside the first, a chain of them
    /// would nest one stack frame group per operation. So only the outermost start on a
    /// thread runs; nested ones are handed to its loop.
    func _startInline(_ operation: Operation) {
        if let outer = OperationQueue._inlineStarts.value {
            outer.assumingMemoryBound(to: InlineStarts.self).pointee.pending.append((self, operation))
            return
        }
        // On this thread's stack (this is every async operation's path: no allocation).
        var starts = InlineStarts()
        withUnsafeMutablePointer(to: &starts) { starts in
            OperationQueue._inlineStarts.set(UnsafeMutableRawPointer(starts))
            defer { OperationQueue._inlineStarts.set(nil) }
            var next: (OperationQueue, Operation)? = (self, operation)
            var index = 0
            while let (queue, operation) = next {
                starts.pointee.starting = queue
                queue._startClaimed(operation)
                starts.pointee.starting = nil
                if index < starts.pointee.pending.count {
                    next = starts.pointee.pending[index]
                    index += 1
                } else {
                    next = nil
                }
                // Started ones are let go as the loop goes (a chain can be long).
                if index == starts.pointee.pending.count {
                    starts.pointee.pending.removeAll(keepingCapacity: true)
                    index = 0
                }
            }
        }
    }

    /// Starts a claimed operation on this thread, as its queue's worker would: confirms
    /// `isReady`, records the started event, and runs `start()` with the queue current.
    private func _startClaimed(_ operation: Operation) {
        guard _confirmReady(operation) else { return }
        if hasEventHandlers.load(ordering: .relaxed) { _recordStart(of: operation, slot: nil) }
        operation.start()
    }

    /// The queue starting an operation on this thread outside its workers (`_startInline`):
    /// the current queue meanwhile, and a start by a queue for an `async` body's operation. A thread-local
    /// value, not a task-local one: binding a task-local costs more than the rest of a start.
    static var _startingInline: OperationQueue? {
        guard let starts = _inlineStarts.value else { return nil }
        return starts.assumingMemoryBound(to: InlineStarts.self).pointee.starting
    }

    /// The inline starts waiting for the outermost one on this thread (`_startInline`).
    static let _inlineStarts = ThreadLocalPointer()
}

/// Operations claimed for inline starts while one was already running on this thread (on
/// the stack of the outermost start; only that thread reaches it).
struct InlineStarts {
    var pending: [(OperationQueue, Operation)] = []
    /// The queue whose operation is being started (unretained: `pending` or the caller
    /// holds it meanwhile).
    unowned(unsafe) var starting: OperationQueue?
}
