@_spi(Engine) import Operations
import OperationsComposition
import OperationsRecording
import Testing

@Suite("Recording a group's children and a retry's attempts")
struct NestedQueueTests {
    @Test("a group's children, added before and after recording starts, are in a row named after the group")
    func groupChildren() {
        let before = BlockOperation {}
        before.name = "before"
        let group = GroupOperation(operations: [before])
        group.name = "sums"
        let recorder = OperationRecorder(title: "group")
        let queue = OperationQueue()
        queue.name = "outer"
        recorder.record(queue)
        recorder.record(group)
        let after = BlockOperation {}
        after.name = "after"
        group.addChild(after)
        queue.addOperation(group)
        group.waitUntilFinished()
        let recording = recorder.stop()
        let children = recording.operations.filter { $0.queue == "sums children" }
        #expect(children.map(\.name).sorted() == ["after", "before"])
        #expect(children.allSatisfy { $0.started != nil && $0.outcome == .succeeded })
        let recordedGroup = recording.operations.first { $0.name == "sums" }
        #expect(recordedGroup?.queue == "outer")
        // Children first, always: the group finishes after its last child.
        if let groupFinished = recordedGroup?.finished {
            #expect(children.allSatisfy { ($0.finished ?? .max) <= groupFinished })
        } else {
            Issue.record("the group was not recorded as finished")
        }
    }

    @Test("a retry's attempts are in a row named after the retry, one per attempt")
    func retryAttempts() async {
        struct Flaky: Error {}
        let retry = RetryOperation<Int>(maximumAttempts: 3) { attempt in
            let operation = ValueBlockOperation<Int> {
                if attempt < 3 { throw Flaky() }
                return attempt
            }
            operation.name = "attempt \(attempt)"
            return operation
        }
        retry.name = "fetch"
        let recorder = OperationRecorder(title: "retry")
        recorder.record(attemptsOf: retry)
        let queue = OperationQueue()
        queue.addOperation(retry)
        _ = try? await retry.value
        let recording = recorder.stop()
        let attempts = recording.operations.filter { $0.queue == "fetch attempts" }
        #expect(attempts.map(\.name) == ["attempt 1", "attempt 2", "attempt 3"])
        #expect(attempts.map(\.outcome) == [.failed(error: "Flaky()"), .failed(error: "Flaky()"), .succeeded])
    }
}

@Suite("Recording a queue that already has operations")
struct RecordingStartTests {
    /// An operation already in the queue that finishes between the recorder subscribing
    /// and its look at the queue must not lose its finish (the event names an operation
    /// not yet entered) and be entered afterwards as never finished. Forced: the
    /// recorder's seam between the two lets the operation finish there.
    @Test("an operation that finishes while recording starts is recorded as finished")
    func finishesWhileRecordingStarts() {
        let release = DispatchSemaphore(value: 0)
        let running = DispatchSemaphore(value: 0)
        let operation = BlockOperation {
            running.signal()
            release.wait()
        }
        operation.name = "already there"
        let queue = OperationQueue()
        queue.addOperation(operation)
        running.wait()
        let recorder = OperationRecorder(title: "start")
        recorder._afterSubscribing.withLock { hook in
            hook = {
                release.signal()
                operation.waitUntilFinished()
            }
        }
        recorder.record(queue)
        queue.waitUntilAllOperationsAreFinished()
        let recording = recorder.stop()
        let recorded = recording.operations.first { $0.name == "already there" }
        #expect(recorded?.finished != nil, "recorded as never finished")
        #expect(recorded?.outcome == .succeeded)
    }
}
