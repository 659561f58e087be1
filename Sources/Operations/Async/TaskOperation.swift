/// An operation whose work is an `async` method: subclass it and override ``run()``.
///
/// The ready-made form of the tutorials' hand-written asynchronous operation: no
/// `isExecuting`/`isFinished` overrides and no key-value announcements to write. When
/// started, it runs ``run()`` in a `Task` and **keeps its queue slot until `run()`
/// returns**, suspended or not: `maxConcurrentOperationCount = 4` means at most four
/// bodies in flight.
///
/// - ``Operation/cancel()`` cancels the task (the body sees `Task.isCancelled`, and
///   `try Task.checkCancellation()` throws); a `CancellationError` after a cancel counts
///   as cancelled.
/// - A queue runs the bodies it starts one after another in a few long-lived tasks (up to
///   its limit) rather than a task each; a cancel or an escalation still reaches only the
///   body it is meant for.
/// - A body that throws fails the operation with the error (``Operation/Outcome/failed(_:)``).
/// - The task's priority follows the operation's quality of service (and escalations).
/// - On ``OperationQueue/main`` the body runs on the main actor.
/// - Inside the body, ``OperationQueue/current`` is the queue that started it, also after
///   a suspension point.
///
/// - Note: `@unchecked Sendable`: the task (or slot) is in `storage`, under its lock.
open class TaskOperation<Success: Sendable>: ValueOperation<Success>, @unchecked Sendable {

    public override init() {
        super.init()
        _finishesLater = true
    }

    override init(inputs: [Operation]) {
        super.init(inputs: inputs)
        _finishesLater = true
    }

    override init(work: ValueStorage.Work, inputs: [Operation]) {
        super.init(work: work, inputs: inputs)
        _finishesLater = true
    }

    /// The work. The base implementation traps: a subclass must override it.
    open func run() async throws -> Success {
        Misuse.fail("\(_misuseName) must override run() (a TaskOperation subclass does its work there)")
    }

    /// Always true: the operation finishes when ``run()`` returns, after `start()` did.
    public final override var isAsynchronous: Bool { true }

    /// Synchronous work is not how a `TaskOperation` works: it overrides ``run()``.
    public final override func execute() throws -> Success {
        Misuse.fail("execute() called on \(_misuseName); a TaskOperation does its work in run()")
    }

    /// Cancels it first when an input did not succeed (`then`, `combine`), then starts
    /// the task. Final: starting must never block (queues start it on any thread).
    public final override func start() {
        super.start()
    }

    override var _startsWithoutBlocking: Bool { true }

    /// Where the body's nonisolated code runs; nil for the global concurrent executor.
    var _preferredExecutor: (any TaskExecutor)? {
        guard _hasExtras else { return nil }
        return _readState { $0.attachments?.preferredExecutor }
    }

    override func _runWork() {
        let (queue, ownQuality) = _readState { ($0.queue, $0.threadQuality) }
        let onMain = queue === OperationQueue._main
        let priority = TaskPriority(_startQuality(own: ownQuality, queue: queue))
        let scopes = queue?._currentTaskScopes ?? []
        // Started by its queue, the body runs in a slot task (`BodySlot`): the one whose body
        // just ended on this thread, or a new one. A slot is detached: it takes nothing from
        // the thread that starts it (a queue worker, or a slot whose body just ended), neither
        // task-local values nor an executor preference; the body binds its own. Started by
        // hand, the body's task inherits the caller's task-local values.
        let byQueue = WorkerContext.current != nil || OperationQueue._startingInline != nil
        // On the main queue, nonisolated code of the body runs on the main actor's queue too.
        // (Read before the storage lock: it takes the operation's.)
        let executor: (any TaskExecutor)? = onMain ? MainQueueTaskExecutor.shared : _preferredExecutor
        if byQueue && executor == nil {
            let job = BodySlot.Job(operation: self, queue: queue, scopes: scopes)
            // Stored under the lock that `_releaseWork` takes at the finish (the finish always
            // drops it) and that `cancel()` reads it under. A cancel that came before it was
            // stored did not see it: it is passed on here.
            let (slot, cancelled) = storage.withLock { storage -> (BodySlot, Bool) in
                let slot: BodySlot
                if !isCancelled, let handing = BodySlot.handingOver, handing.take(job, priority: priority) {
                    slot = handing
                } else {
                    slot = BodySlot(first: job, priority: priority)
                }
                storage.slot = slot
                return (slot, isCancelled)
            }
            if cancelled { slot.cancel(self) }
            return
        }
        let body: @Sendable @isolated(any) () async -> Void = { [self] in
            let bodyTask = withUnsafeCurrentTask { $0?.hashValue }
            await _runBody(context: TaskBodyContext(queue: queue, operation: self, bodyTask: bodyTask), scopes: scopes)
            _finish(wasExecuting: true)
        }
        // Created under the lock that `_releaseWork` takes at the finish: the handle is
        // stored before the body can finish, so the finish always drops it. (Creating a
        // task runs no user code.) A cancel that came before the task was stored did not
        // see it: it is cancelled here.
        let (started, cancelled) = storage.withLock { storage -> (Task<Void, Never>, Bool) in
            // Without a preference, the plain spellings: passing a nil preference costs a
            // step on every start.
            let started: Task<Void, Never>
            switch (byQueue, executor) {
            case (true, let executor?): started = Task.detached(executorPreference: executor, priority: priority, operation: body)
            case (false, nil): started = Task(priority: priority, operation: body)
            case (false, let executor?): started = Task(executorPreference: executor, priority: priority, operation: body)
            case (true, nil): preconditionFailure("Operations: a queue's start without an executor runs in a slot")
            }
            storage.task = started
            return (started, isCancelled)
        }
        if cancelled { started.cancel() }
    }

    /// Runs the body, binding `context` (the task-local that says whose body it is) unless
    /// it is nil: a slot has bound it for all its bodies.
    override func _runBody(context: TaskBodyContext?, scopes: [TaskScope]) async {
        guard let context else {
            guard scopes.isEmpty else {
                return await _runInside(scopes[...], of: self) { await self._runAndDeliver() }
            }
            // Not through `_runAndDeliver()`: every `async` call costs a frame on the task.
            do {
                if let body = _ownBody() {
                    _deliver(try await body())
                } else {
                    _deliver(try await run())
                }
            } catch {
                _recordFailure(error)
            }
            return
        }
        await OperationQueue.$_taskContext.withValue(context) {
            await _runBody(context: nil, scopes: scopes)
        }
    }

    /// The closure to call instead of ``run()`` when that is not overridden (no frame for
    /// `run()`, and its boxed value is kept as it is); nil to call `run()`.
    func _ownBody() -> (@Sendable () async throws -> any Sendable)? { nil }

    /// Runs the body and keeps its value, or reports its error.
    private func _runAndDeliver() async {
        do {
            _deliver(try await run())
        } catch {
            _recordFailure(error)
        }
    }

    /// The quality of service the body starts at: its own (or the escalated one), never
    /// below its queue's; its queue's when it has none (as for a synchronous operation's
    /// thread).
    private func _startQuality(own: QualityOfService?, queue: OperationQueue?) -> QualityOfService {
        QualityOfService.runningAt(own: own, queue: queue?._threadQuality)
    }

    /// Sets ``Operation/isCancelled`` and cancels the running task.
    open override func cancel() {
        super.cancel()
        let (task, slot) = storage.withLock { ($0.task, $0.slot) }
        task?.cancel()
        slot?.cancel(self)
    }

    override func _escalateWork(to quality: QualityOfService) {
        guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { return }
        let (task, slot) = storage.withLock { ($0.task, $0.slot) }
        task?.escalatePriority(to: TaskPriority(quality))
        slot?.escalate(self, to: TaskPriority(quality))
    }
}

/// An operation whose work is an `async` closure, returning a value of type `Success`.
///
/// ```swift
/// let download = AsyncBlockOperation { try await fetch(url) }
/// queue.maxConcurrentOperationCount = 4   // at most 4 downloads in flight
/// queue.addOperation(download)
/// let data = try await download.value
/// ```
///
/// Everything of ``TaskOperation`` applies; a `@MainActor` closure runs on the main actor.
///
/// - Note: `@unchecked Sendable`: the closure is in `storage`, under its lock.
open class AsyncBlockOperation<Success: Sendable>: TaskOperation<Success>, @unchecked Sendable {
    /// Creates an operation whose value is what `body` returns.
    public init(_ body: @escaping @Sendable @isolated(any) () async throws -> Success) {
        super.init(work: .asynchronous { try await body() }, inputs: [])
    }

    init(inputs: [Operation], body: @escaping @Sendable @isolated(any) () async throws -> Success) {
        super.init(work: .asynchronous { try await body() }, inputs: inputs)
    }

    open override func run() async throws -> Success {
        // The closure returns a `Success`, boxed.
        return try await _takeBody()() as! Success
    }

    override func _ownBody() -> (@Sendable () async throws -> any Sendable)? {
        // A subclass may override `run()`. Whether the class is exactly this one costs a
        // generic metadata lookup (a hashed cache in the runtime); the answer is kept.
        let type = type(of: self)
        if !plainAsyncBlockOperationClasses.contains(type) {
            guard type == AsyncBlockOperation<Success>.self else { return nil }
            plainAsyncBlockOperationClasses.insert(type)
        }
        return _takeBody()
    }

    private func _takeBody() -> @Sendable () async throws -> any Sendable {
        let work = storage.withLock { storage in
            defer { storage.work = .none }
            return storage.work
        }
        guard case .asynchronous(let body) = work else {
            preconditionFailure("Operations: the body of \(_misuseName) ran twice")
        }
        return body
    }
}

/// The specializations of `AsyncBlockOperation` itself (not of a subclass) met so far.
private let plainAsyncBlockOperationClasses = ClassSet()

/// What the task running an operation's `async` body knows: its queue, and the operation
/// (for stall reports: a wait inside the body holds the operation's slot).
///
/// A slot binds one context for all its bodies (binding a task-local per body costs more
/// than the rest of a body's start): its operation is then the slot's running one.
struct TaskBodyContext: Sendable {
    let queue: OperationQueue?
    private let ownOperation: Operation?
    /// The body's own task (`UnsafeCurrentTask`'s hash: its identity while it runs): tasks
    /// the body spawns inherit the context, but their waits are not the body's.
    var bodyTask: Int?
    /// The slot whose task runs the bodies, when a queue started them.
    let slot: BodySlot?

    init(queue: OperationQueue?, operation: Operation?, bodyTask: Int?, slot: BodySlot? = nil) {
        self.queue = queue
        self.ownOperation = operation
        self.bodyTask = bodyTask
        self.slot = slot
    }

    var operation: Operation? { ownOperation ?? slot?.runningOperation }
}

extension OperationQueue {
    /// The operation (and queue) whose `async` body the current task runs.
    @TaskLocal static var _taskContext: TaskBodyContext?

    /// The queue whose operation's `async` body the current task runs (none while a slot
    /// finishes an operation between two bodies, as for a task of its own).
    static var _taskQueue: OperationQueue? {
        guard let context = _taskContext else { return nil }
        if let slot = context.slot, BodySlot.handingOver === slot { return nil }
        return context.queue
    }
}

/// Runs jobs on the main dispatch queue: the executor preference of the bodies of
/// operations on ``OperationQueue/main``, so that their nonisolated code runs there too.
final class MainQueueTaskExecutor: TaskExecutor {
    static let shared = MainQueueTaskExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        DispatchQueue.main.async { job.runSynchronously(on: executor) }
    }
}
