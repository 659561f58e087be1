import Operations
import OperationsRecording
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The modern form of the async chapter: operations whose bodies are `async`.
extension AsyncChapter {
    /// Downloads as `AsyncBlockOperation`s over URLSession's async API on a queue with a
    /// limit of 4, decoded and filtered along `then`, values collected as they complete;
    /// then a batch cancelled by cancelling the task that awaits it. Returns the notes.
    func runWithTasks(
        in context: TourContext, server: ImageServer, recorder: OperationRecorder, result: inout ChapterResult
    ) throws -> [String] {
        let downloads = OperationQueue()
        downloads.name = "async downloads (limit 4)"
        downloads.maxConcurrentOperationCount = 4
        let filters = OperationQueue()
        filters.name = "filters"
        recorder.record(downloads)
        recorder.record(filters)
        let inFlight = BodyMeter()
        let count = max(context.settings.imageCount, 6)

        func download(_ index: Int) -> AsyncBlockOperation<Data> {
            let url = server.url(ofImage: index % context.settings.imageCount)
            let operation = AsyncBlockOperation { () async throws -> Data in
                inFlight.enter()
                defer { inFlight.leave() }
                let (data, response) = try await fetch(url)
                if let http = response as? HTTPURLResponse, http.statusCode != 200 {
                    throw TourError.badResponse(url: url.absoluteString, reason: "HTTP \(http.statusCode)")
                }
                return data
            }
            operation.name = "await download \(index)"
            return operation
        }

        // 1. Download → decode + sepia (synchronous `then`, on the filter queue), values as
        // they complete.
        let fetched = (0..<count).map(download)
        let sepia = fetched.enumerated().map { index, download in
            let filter = download.then { data in Filters.sepia(try RGBAImage(png: data)) }
            filter.name = "sepia \(index)"
            return filter
        }
        downloads.addOperations(fetched, waitUntilFinished: false)
        let images = try blockingAwait { () async throws -> [RGBAImage] in
            var images: [RGBAImage] = []
            for try await image in filters.results(adding: sepia) { images.append(image) }
            return images
        }
        result.numbers["async images"] = Double(images.count)
        result.numbers["async most in flight"] = Double(inFlight.most)
        let first = "\(images.count) downloads as async bodies with a limit of 4 (at most \(inFlight.most) in flight, suspended in URLSession), each decoded and sepia-filtered along then(), collected as they completed"

        // 2. A batch whose awaiting task is cancelled: the slow image is held back by the
        // server, so the cancellation always finds work in flight.
        let held = server.hold(image: ImageServer.slowImage)
        defer { held.release() }
        let batch = (0..<count).map(download)
        let received = Protected(0)
        let someArrived = DispatchSemaphore(value: 0)
        let consumer = Task {
            for try await _ in downloads.results(adding: batch) {
                if received.withLock({ $0 += 1; return $0 }) == 2 { someArrived.signal() }
            }
        }
        someArrived.wait()
        consumer.cancel()
        // The loop ends once its task is cancelled, and the batch's unfinished operations
        // are cancelled with it; then the server may let the held image go.
        _ = try? blockingAwait { try await consumer.value }
        held.release()
        downloads.waitUntilAllOperationsAreFinished()
        let cancelled = batch.filter { $0.outcome?.isCancelled == true }
        result.numbers["async cancelled"] = Double(cancelled.count)
        result.numbers["async slow cancelled"] = batch[ImageServer.slowImage].outcome?.isCancelled == true ? 1 : 0
        let second = "a second batch of \(count): the awaiting task was cancelled after \(received.current) values; \(cancelled.count) downloads were cancelled with it (the held slow one among them: \(batch[ImageServer.slowImage].outcome?.isCancelled == true))"
        return [first, second]
    }
}

/// Counts async bodies in flight, and the most at once.
final class BodyMeter: Sendable {
    private let state = Protected((now: 0, most: 0))
    func enter() { state.withLock { $0.now += 1; $0.most = max($0.most, $0.now) } }
    func leave() { state.withLock { $0.now -= 1 } }
    var most: Int { state.current.most }
}

/// Runs `body` in a task and blocks this (chapter) thread until it returns.
func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let outcome = Protected<Result<T, any Error>?>(nil)
    Task {
        let result = await Result { try await body() }
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.current!.get()
}
