import Operations
import OperationsComposition
import OperationsTestSupport
import Testing

@Suite("Cancellation travels up a chain when nobody else wants the value", .timeLimit(.minutes(1)))
struct UpstreamCancellationTests {
    /// Downloads on a queue of one slot, each stage a `then` on another queue. Download 0
    /// returns at once; download 1 holds the slot until `release` opens, then checks for
    /// cancellation; the others record that they started.
    struct Pipeline {
        let downloads: [AsyncBlockOperation<Int>]
        let stages: [AsyncBlockOperation<Int>]
        let started = Shared<[Int]>([])
        let release = TestGate()
        let downloadQueue = OperationQueue()
        let stageQueue = OperationQueue()

        /// `timeouts`: each download gets a timeout far beyond the test (it never fires).
        init(count: Int, timeouts: Bool = false) {
            downloadQueue.maxConcurrentOperationCount = 1
            let started = started, release = release
            downloads = (0..<count).map { index in
                AsyncBlockOperation { () async throws -> Int in
                    guard index > 0 else { return 0 }
                    started.update { $0.append(index) }
                    if index == 1 {
                        await release.wait()
                        try Task.checkCancellation()
                    }
                    return index
                }
            }
            if timeouts {
                for download in downloads { download.timeout(after: .seconds(3_600)) }
            }
            stages = downloads.map { download in download.then { (value: Int) async -> Int in value * 10 } }
            downloadQueue.addOperations(downloads, waitUntilFinished: false)
        }
    }

    @Test(
        "leaving a results loop early cancels the downloads its stages were waiting for; none of them starts (also with a timeout on each download, which waits for nothing)",
        arguments: [false, true])
    func leavingTheLoopStopsTheDownloads(timeouts: Bool) async throws {
        let pipeline = Pipeline(count: 6, timeouts: timeouts)
        #expect(try await firstValue(of: pipeline) == 0)
        pipeline.release.open()
        await pipeline.downloadQueue.waitUntilAllOperationsAreFinished()
        await pipeline.stageQueue.waitUntilAllOperationsAreFinished()
        #expect(pipeline.started().allSatisfy { $0 == 1 }, "downloads that nobody wanted started: \(pipeline.started())")
        for download in pipeline.downloads.dropFirst() {
            #expect(download.isCancelled, "\(download.name ?? "a download") ran on after its consumer went away")
        }
        #expect(!pipeline.downloads[0].isCancelled)
    }

    @Test("an upstream that another stage, a dependent or an awaiting task still wants runs on")
    func wantedUpstreamRunsOn() async throws {
        let queue = OperationQueue()
        queue.isSuspended = true
        let shared = ValueBlockOperation { 1 }
        let first = shared.then { $0 + 1 }
        let second = shared.then { $0 + 2 }
        let awaited = ValueBlockOperation { 3 }
        let awaitedStage = awaited.then { $0 + 1 }
        let depended = ValueBlockOperation { 4 }
        let dependedStage = depended.then { $0 + 1 }
        let plain = BlockOperation {}
        plain.addDependency(depended)
        queue.addOperations([shared, first, second, awaited, awaitedStage, depended, dependedStage, plain], waitUntilFinished: false)
        let waiting = Task { try await awaited.value }
        await waitUntilAwaited(awaited)
        first.cancel()
        awaitedStage.cancel()
        dependedStage.cancel()
        #expect(!shared.isCancelled, "the second stage still wants it")
        #expect(!awaited.isCancelled, "a task awaits its value")
        #expect(!depended.isCancelled, "an operation depends on it")
        second.cancel()
        #expect(shared.isCancelled, "no stage wants it any more")
        queue.isSuspended = false
        #expect(try await waiting.value == 3)
        await queue.waitUntilAllOperationsAreFinished()
    }

    @Test("an upstream that a wait wants runs on: perform, waitUntilFinished (async and blocking), a group")
    func waitsWantTheUpstream() async throws {
        let queue = OperationQueue()
        queue.isSuspended = true
        let performed = ValueBlockOperation { 1 }
        let awaited = ValueBlockOperation { 2 }
        let blocked = ValueBlockOperation { 3 }
        let child = ValueBlockOperation { 4 }
        let group = ValueGroupOperation([child])
        let stages = [performed, awaited, blocked, child].map { input in input.then { $0 } }
        queue.addOperations([awaited, blocked, group], waitUntilFinished: false)
        let performing = Task { try await queue.perform(performed) }
        let waiting = Task { await awaited.waitUntilFinished() }
        let returned = BlockingSignal()
        onNewThread {
            blocked.waitUntilFinished()
            returned.open()
        }
        // Each wait has begun once the operation counts it among its waiters.
        for input in [performed, awaited, blocked] {
            while input._finishWaiterCount == 0 { await Task.yield() }
        }
        for stage in stages { stage.cancel() }
        #expect(!performed.isCancelled, "perform's caller wants it")
        #expect(!awaited.isCancelled, "a task awaits waitUntilFinished()")
        #expect(!blocked.isCancelled, "a thread is blocked in waitUntilFinished()")
        #expect(!child.isCancelled, "its group wants it")
        queue.isSuspended = false
        #expect(try await performing.value == 1)
        await waiting.value
        #expect(returned.wait())
        #expect(try await group.values == [4])
    }

    @Test("a chain cancelled at its end stops every stage before it, one level at a time, however long")
    func longChain() {
        let queue = OperationQueue()
        queue.isSuspended = true
        var stages: [ValueBlockOperation<Int>] = [ValueBlockOperation { 0 }]
        for _ in 0..<5_000 { stages.append(stages.last!.then { $0 + 1 }) }
        queue.addOperations(stages, waitUntilFinished: false)
        stages.last!.cancel()
        #expect(stages.allSatisfy { $0.isCancelled })
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("Operation.cancel(_:) cancels a batch as one step: no pending member starts in a slot a running one freed")
    func batch() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let started = Shared<[Int]>([])
        let running = TestGate()
        let first = AsyncBlockOperation { () async throws -> Int in
            running.open()
            try await Task.sleep(for: .seconds(3_600))
            return 0
        }
        let rest = (1...4).map { index in
            AsyncBlockOperation { () async -> Int in
                started.update { $0.append(index) }
                return index
            }
        }
        queue.addOperations([first] + rest, waitUntilFinished: false)
        await running.wait()
        Operation.cancel([first] + rest)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(started() == [])
        #expect(([first] + rest).allSatisfy { $0.isCancelled })
    }

    @Test("an operation a key gave to two callers runs on when one caller's stage is cancelled")
    func keyedInputWithAnotherCaller() async throws {
        let queue = OperationQueue()
        queue.isSuspended = true
        let first = queue.addOperation(forKey: "shared input") { ValueBlockOperation { 1 } }
        let stage = first.then { $0 + 1 }
        let second = queue.addOperation(forKey: "shared input") { ValueBlockOperation { 99 } }
        #expect(first === second)
        queue.addOperation(stage)
        stage.cancel()
        #expect(!second.isCancelled, "cancelled though the key's second caller may still want it")
        queue.isSuspended = false
        #expect(try await second.value == 1)
        await queue.waitUntilAllOperationsAreFinished()
    }

    /// The first value of a loop over the pipeline's stages, leaving the loop after it. (A
    /// function of its own: the loop's iterator goes away when it returns.)
    private func firstValue(of pipeline: Pipeline) async throws -> Int? {
        for try await value in pipeline.stageQueue.results(adding: pipeline.stages) {
            return value
        }
        return nil
    }

    /// Waits until a task awaits `operation`'s value.
    private func waitUntilAwaited(_ operation: ValueOperation<Int>) async {
        while operation._finishWaiterCount == 0 { await Task.yield() }
    }
}
