// Where the composition layer's tasks run.

import Operations
import Synchronization

/// Runs the jobs of the composition layer's tasks (condition evaluations, timeout timers,
/// delays, retry loops) on a few serial Dispatch queues, which sit on Dispatch's overcommit
/// pool, round robin: they must not wait for Swift's cooperative threads, which blocking
/// code (a semaphore wait, a `waitUntilFinished()`) may be holding. Jobs run only between
/// suspension points, so a few lanes are plenty.
final class CompositionExecutor: TaskExecutor {
    static let shared = CompositionExecutor()

    private let lanes = (0..<4).map { DispatchQueue(label: "Operations composition \($0)") }
    private let next = Atomic<Int>(0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let lane = lanes[next.add(1, ordering: .relaxed).newValue & 3]
        lane.async { job.runSynchronously(on: executor) }
    }
}
