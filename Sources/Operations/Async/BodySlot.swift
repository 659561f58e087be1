// Long-lived tasks that run the `async` bodies of queued operations in turn.

/// A task that runs the `async` bodies of operations started by queues, one after another.
///
/// When a body ends, its operation's finish frees the queue slot, and the queue starts its
/// next ready `async` operation on the same thread (`_startInline`). That start is handed to
/// the slot running on this thread, which runs the new body next, instead of the start
/// creating a task per operation.
///
/// A cancel or an escalation must reach only the body it was meant for: it marks the slot
/// spent, and a spent slot takes no more bodies (its task ends after the current one). So
/// the slot's task is cancelled or escalated only while it runs that operation's body, and
/// its later bodies run in fresh slots.
///
/// Only bodies of the slot's own priority are handed over, and only to a slot without an
/// executor preference (the main queue's and preferring operations take tasks of their own).
final class BodySlot: Sendable {
    struct Job: Sendable {
        let operation: Operation
        let queue: OperationQueue?
        let scopes: [TaskScope]
    }

    private struct State {
        var task: Task<Void, Never>?
        /// The operation whose body runs now or is handed over next.
        var current: ObjectIdentifier?
        var next: Job?
        /// The operation whose body runs now (until the next one starts: no lock of its own
        /// when a body ends; held no longer than the loop holds the job).
        var running: Operation?
        /// Cancelled or escalated: takes no more bodies.
        var spent = false
    }

    /// The priority the slot's task was created with; handed-over bodies must have it.
    let priority: TaskPriority
    /// The queue whose bodies it runs (the context it binds names it).
    let queue: OperationQueue?
    private let state = Locked(State())

    /// Starts a slot whose task runs `job` first. Takes no task-local values and no
    /// executor preference from the caller (the body binds its own).
    init(first job: Job, priority: TaskPriority) {
        self.priority = priority
        self.queue = job.queue
        // The handle is stored before the task can look at the state (it takes the lock).
        // Creating a task runs no user code.
        state.withLock { state in
            state.current = ObjectIdentifier(job.operation)
            state.next = job
            state.task = Task.detached(priority: priority) { [self] in await self.run() }
        }
    }

    private func run() async {
        let bodyTask = withUnsafeCurrentTask { $0?.hashValue }
        await OperationQueue.$_taskContext.withValue(TaskBodyContext(queue: queue, operation: nil, bodyTask: bodyTask, slot: self)) {
            await runBodies()
        }
        // Dropped after the lock: the last references to the task handle and the operation.
        let (task, running) = state.withLock { state in
            defer {
                state.task = nil
                state.running = nil
            }
            return (state.task, state.running)
        }
        _ = (task, running)
    }

    private func runBodies() async {
        while let job = state.withLock({ state -> Job? in
            defer { state.next = nil }
            if let next = state.next { state.running = next.operation }
            return state.next
        }) {
            await job.operation._runBody(context: nil, scopes: job.scopes)
            // While the operation finishes, the queue's next start on this thread comes here;
            // not when the finish runs user code after freeing the slot (a completion block,
            // an observer): that code could wait for the next body, which would wait for it.
            guard job.operation._finishesQuietly else {
                job.operation._finish(wasExecuting: true)
                continue
            }
            let outer = Self._handingOver.value
            Self._handingOver.set(Unmanaged.passUnretained(self).toOpaque())
            job.operation._finish(wasExecuting: true)
            Self._handingOver.set(outer)
        }
    }

    /// The operation whose body runs now, for the context the slot binds.
    var runningOperation: Operation? { state.withLock { $0.running } }

    /// The slot whose body's operation is finishing on this thread, if any.
    static var handingOver: BodySlot? {
        _handingOver.value.map { Unmanaged<BodySlot>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let _handingOver = ThreadLocalPointer()

    /// Takes `job` as the next body: false when the slot is spent, has a next body already,
    /// runs another queue's bodies, or at another priority than `priority` (the body's).
    func take(_ job: Job, priority: TaskPriority) -> Bool {
        // Read on the slot's own task: escalated by the runtime, it takes no more bodies.
        guard priority == self.priority, job.queue === queue, Task.currentPriority == self.priority else { return false }
        return state.withLock { state in
            guard !state.spent, state.next == nil else { return false }
            state.current = ObjectIdentifier(job.operation)
            state.next = job
            return true
        }
    }

    /// Cancels the task when it runs (or is about to run) `operation`'s body; it then takes
    /// no more bodies. Called with no lock held (cancellation handlers are user code).
    func cancel(_ operation: Operation) {
        _spend(for: operation)?.cancel()
    }

    /// Escalates the task when it runs `operation`'s body; it then takes no more bodies.
    func escalate(_ operation: Operation, to priority: TaskPriority) {
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { return }
        _spend(for: operation)?.escalatePriority(to: priority)
    }

    private func _spend(for operation: Operation) -> Task<Void, Never>? {
        state.withLock { state in
            guard state.current == ObjectIdentifier(operation) else { return nil }
            state.spent = true
            return state.task
        }
    }
}
