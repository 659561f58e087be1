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
/// - A body that throws fails the operation with the error (``Operation/Outcome/failed(_:)``).
/// - The task's priority follows the operation's quality of service (and escalations).
/// - On ``OperationQueue/main`` the body runs on the main actor.
/// - Inside the body, ``OperationQueue/current`` is the queue that started it, also after
///   a suspension point.
///
/// - Note: `@unchecked Sendable`: the task is guarded by its lock.
open class TaskOperation<Success: Sendable>: ValueOperation<Success>, @unchecked Sendable {
    private let task = Locked<Task<Void, Never>?>(nil)

    public override init() {
        super.init()
    }

    override init(inputs: [Operation]) {
        super.init(inputs: inputs)
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
    var _preferredExecutor: (any TaskExecutor)? { nil }

    override func _runWork() {
        let queue = _update { $0.queue }
        let onMain = queue === OperationQueue.main
        let priority = TaskPriority(_startQuality(queue: queue))
        let body: @Sendable () async -> Void = { [self] in
            let result: Result<Success, any Error>
            do {
                result = .success(try await OperationQueue.$_taskQueue.withValue(queue) { try await self.run() })
            } catch {
                result = .failure(error)
            }
            _deliver(result)
            _finish(wasExecuting: true)
        }
        // On the main queue, nonisolated code of the body runs on the main actor's queue too.
        let started: Task<Void, Never>
        if onMain {
            started = Task(executorPreference: MainQueueTaskExecutor.shared, priority: priority) { await body() }
        } else if let executor = _preferredExecutor {
            started = Task(executorPreference: executor, priority: priority) { await body() }
        } else {
            started = Task(priority: priority) { await body() }
        }
        // A cancel that came before the task was stored did not see it.
        let stored = task.withLock { task in
            task = started
            return isCancelled
        }
        if stored { started.cancel() }
    }

    /// The quality of service the body starts at: its own (or the escalated one), never
    /// below its queue's.
    /// As for the thread of a synchronous operation: its queue's when it has none.
    private func _startQuality(queue: OperationQueue?) -> QualityOfService {
        let own = _update { $0.threadQuality }
        guard let queue else { return own ?? .default }
        let floor = queue.qualityOfService
        guard let own else { return floor }
        return floor.rank > own.rank ? floor : own
    }

    /// Sets ``Operation/isCancelled`` and cancels the running task.
    open override func cancel() {
        super.cancel()
        task.withLock { $0 }?.cancel()
    }

    override func _escalateWork(to quality: QualityOfService) {
        task.withLock { $0 }?.escalatePriority(to: TaskPriority(quality))
    }

    override func _releaseWork() {
        // The finished task is dropped after the lock.
        let finished = task.withLock { $0.take() }
        _ = finished
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
/// - Note: `@unchecked Sendable`: the closure is set in `init` and only taken under its lock.
open class AsyncBlockOperation<Success: Sendable>: TaskOperation<Success>, @unchecked Sendable {
    private let body: Locked<(@Sendable @isolated(any) () async throws -> Success)?>

    /// Creates an operation whose value is what `body` returns.
    public init(_ body: @escaping @Sendable @isolated(any) () async throws -> Success) {
        self.body = Locked(body)
        super.init()
    }

    init(inputs: [Operation], body: @escaping @Sendable @isolated(any) () async throws -> Success) {
        self.body = Locked(body)
        super.init(inputs: inputs)
    }

    open override func run() async throws -> Success {
        guard let body = body.withLock({ $0.take() }) else {
            preconditionFailure("Operations: the body of \(_misuseName) ran twice")
        }
        return try await body()
    }

    override func _releaseWork() {
        super._releaseWork()
        let body = body.withLock { $0.take() }
        _ = body
    }
}

extension OperationQueue {
    /// The queue whose operation's `async` body the current task runs.
    @TaskLocal static var _taskQueue: OperationQueue?
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
