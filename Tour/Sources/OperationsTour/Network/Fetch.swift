import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads `url` with a data task, for async code; cancelling the awaiting task cancels
/// the request.
///
/// Why not `URLSession.data(from:)`: with the swift-corelibs-foundation of this toolchain,
/// cancelling a task suspended in it can deadlock. The cancellation handler
/// runs under the task's status lock and cancels the request synchronously on the
/// session's queue, while that queue, finishing the same request, waits for the status
/// lock to resume the task. The tour's async chapter hit it under Address Sanitizer. Here
/// the handler only hands the cancel to another thread.
func fetch(_ url: URL) async throws -> (Data, URLResponse) {
    let request = RequestBox()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            let task = URLSession.shared.dataTask(with: url) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else if let response {
                    continuation.resume(returning: (data ?? Data(), response))
                } else {
                    continuation.resume(throwing: URLError(.badServerResponse))
                }
            }
            if request.start(task) { task.resume() }
        }
    } onCancel: {
        // Not here, under the task's status lock: see above.
        DispatchQueue.global().async { request.cancel() }
    }
}

/// The request of one `fetch`, and whether it was cancelled before it started.
/// - Note: `@unchecked Sendable`: both fields are behind `lock`.
private final class RequestBox: @unchecked Sendable {
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    /// Keeps the task; false when the fetch was cancelled already (the task is then
    /// cancelled, and finishes with a cancellation error, instead of running).
    func start(_ task: URLSessionDataTask) -> Bool {
        let wasCancelled = lock.withLock {
            self.task = task
            return cancelled
        }
        if wasCancelled {
            task.resume()
            task.cancel()
        }
        return !wasCancelled
    }

    func cancel() {
        let task = lock.withLock {
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}
