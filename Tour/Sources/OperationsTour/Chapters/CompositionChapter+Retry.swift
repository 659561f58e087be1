import Operations
import OperationsComposition
import OperationsRecording
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP answer other than 200.
struct HTTPStatusError: Error, CustomStringConvertible {
    var status: Int
    var description: String { "HTTP \(status)" }
}

extension CompositionChapter {
    /// A download from an endpoint that answers 503 twice before it serves the image,
    /// retried with exponential backoff; only a 503 is worth retrying.
    func retriedDownload(
        in context: TourContext, server: ImageServer, queue: OperationQueue, recorder: OperationRecorder,
        result: inout ChapterResult
    ) throws -> String {
        let url = server.flakyURL(ofImage: 2)
        let statuses = Protected<[Int]>()
        let first = Duration.seconds(context.settings.unit / 4)
        let retry = RetryOperation<Data>(
            maximumAttempts: 5, strategy: .exponential(initial: first, maximum: .seconds(context.settings.unit)),
            shouldRetry: { ($0 as? HTTPStatusError)?.status == 503 }
        ) { attempt in
            let download = AsyncBlockOperation<Data> {
                let (data, response) = try await fetch(url)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                statuses.append(status)
                guard status == 200 else { throw HTTPStatusError(status: status) }
                return data
            }
            download.name = "flaky download, attempt \(attempt)"
            return download
        }
        retry.name = "retried download"
        recorder.record(attemptsOf: retry)
        queue.addOperation(retry)
        let data = try blockingAwait { try await retry.value }
        let image = try RGBAImage(png: data)
        result.numbers["retry attempts"] = Double(retry.attemptCount)
        result.lists["retry statuses"] = statuses.current.map { "\($0)" }
        return "a download from an endpoint that answers 503 twice: RetryOperation with exponential backoff (\(first) doubling) made \(retry.attemptCount) attempts (\(statuses.current.map { "\($0)" }.joined(separator: ", "))) and got a \(image.width)×\(image.height) image"
    }
}
