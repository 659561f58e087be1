// Sources/OperationsComposition/OperationsComposition.docc/TimeoutsDelaysAndRetry.md

import OperationsComposition
import Operations

private struct ServerError: Error {}

func timeoutsDelaysAndRetryOverview(
    queue: OperationQueue, url: URL, fetch: @escaping @Sendable (URL) async throws -> Data
) async throws {
let download = RetryOperation(maximumAttempts: 4,
                              strategy: .exponential(initial: .seconds(1), maximum: .seconds(30)),
                              shouldRetry: { $0 is ServerError }) { attempt in
    let request = AsyncBlockOperation { try await fetch(url) }
    request.timeout(after: .seconds(10))              // each attempt
    return request
}
queue.addOperation(download)
let data = try await download.value
_ = data
}
