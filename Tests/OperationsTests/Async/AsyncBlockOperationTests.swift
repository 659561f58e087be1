@testable import Operations
@testable import OperationsComposition
import OperationsTestSupport
import Testing

private let underlyingKey = DispatchSpecificKey<Int>()

@Suite("AsyncBlockOperation and TaskOperation: async bodies in a queue", .timeLimit(.minutes(1)))
struct AsyncBlockOperationTests {
    @Test("the value of the body is awaited with value")
    func value() async throws {
        let queue = OperationQueue()
        let operation = AsyncBlockOperation { () async -> Int in
            await Task.yield()
            return 42
        }
        queue.addOperation(operation)
        #expect(try await operation.value == 42)
        #expect(operation.isFinished)
        #expect(operation.outcome?.isCancelled == false)
        #expect(try operation.result?.get() == 42)
    }

    @Test("a body that throws fails the operation with the error; value rethrows it")
    func failure() async {
        let operation = AsyncBlockOperation<Int> { throw TestError(code: 7) }
        OperationQueue().addOperation(operation)
        await #expect(throws: TestError(code: 7)) { try await operation.value }
        guard case .failed(let error as TestError)? = operation.outcome else {
            Issue.record("outcome \(String(describing: operation.outcome))")
            return
        }
        #expect(error.code == 7)
        #expect(!operation.isCancelled)
    }

    @Test("a queue with limit 2 keeps a slot per body until it returns, suspended or not")
    func slotHeldWhileSuspended() async throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let gate = TestGate()
        let entered = AsyncCounter()
        let meter = ConcurrencyMeter()
        let operations = (0..<6).map { _ in
            AsyncBlockOperation {
                meter.enter()
                entered.increment()
                await gate.waitIgnoringCancellation()
                meter.leave()
            }
        }
        queue.addOperations(operations, waitUntilFinished: false)
        await entered.wait(for: 2)
        // Both bodies are suspended; their start() returned long ago. The others wait for
        // the limit, not for a worker: the slots are held.
        for operation in operations where !operation.isExecuting {
            #expect(operation.waitReasons == [.concurrencyLimit(queue, limit: 2)])
        }
        #expect(operations.filter(\.isExecuting).count == 2)
        gate.open()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(meter.most == 2)
        #expect(entered.value == 6)
    }

    @Test("cancel() cancels the task; a CancellationError then counts as cancelled")
    func cancelCancelsTask() async {
        let entered = TestGate()
        let operation = enteringThenWaitingForCancellation(entered, returning: 1)
        OperationQueue().addOperation(operation)
        await entered.waitIgnoringCancellation()
        operation.cancel()
        await operation.waitUntilFinished()
        #expect(operation.outcome?.isCancelled == true)
        await #expect(throws: CancellationError.self) { try await operation.value }
    }

    @Test("cancel(with:) gives the reason; value throws it")
    func cancelWithReason() async {
        let entered = TestGate()
        let operation = enteringThenWaitingForCancellation(entered)
        OperationQueue().addOperation(operation)
        await entered.waitIgnoringCancellation()
        operation.cancel(with: TestError(code: 3))
        await #expect(throws: TestError(code: 3)) { try await operation.value }
    }

    @Test("an operation cancelled before it starts never runs its body")
    func cancelledBeforeStart() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Shared(false)
        let operation = AsyncBlockOperation { ran.update { $0 = true } }
        queue.addOperation(operation)
        operation.cancel()
        queue.isSuspended = false
        await queue.waitUntilAllOperationsAreFinished()
        #expect(!ran())
        #expect(operation.outcome?.isCancelled == true)
    }

    @Test("cancelAllOperations cancels suspended bodies and pending operations")
    func cancelAll() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let entered = TestGate()
        let first = enteringThenWaitingForCancellation(entered)
        let second = AsyncBlockOperation {}
        queue.addOperations([first, second], waitUntilFinished: false)
        await entered.waitIgnoringCancellation()
        queue.cancelAllOperations()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(first.outcome?.isCancelled == true)
        #expect(second.outcome?.isCancelled == true)
    }

    @Test("dependencies work both ways with classic operations")
    func mixedDependencies() async {
        let log = Shared<[String]>([])
        let classic = BlockOperation { log.append("classic") }
        let async = AsyncBlockOperation {
            await Task.yield()
            log.append("async")
        }
        let after = BlockOperation { log.append("after") }
        async.addDependency(classic)
        after.addDependency(async)
        let queue = OperationQueue()
        queue.addOperations([after, async, classic], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["classic", "async", "after"])
    }

    @Test("KVO: isExecuting then isFinished announced; the completion block runs once after the body")
    func observationAndCompletion() async {
        let operation = AsyncBlockOperation { await Task.yield() }
        let changes = Shared<[String]>([])
        let observations = [
            operation.observe(\.isExecuting, options: [.new]) { _, change in changes.append("executing \(change.newValue!)") },
            operation.observe(\.isFinished, options: [.new]) { _, change in changes.append("finished \(change.newValue!)") },
        ]
        let completed = TestGate()
        let runs = Shared(0)
        operation.completionBlock = { runs.increment(); completed.open() }
        OperationQueue().addOperation(operation)
        await operation.waitUntilFinished()
        await completed.waitIgnoringCancellation()
        #expect(changes() == ["executing true", "executing false", "finished true"])
        #expect(runs() == 1)
        #expect(operation.completionBlock == nil)
        _ = observations
    }

    @Test("the event handler sees enqueued, started, finished; a barrier waits for the body")
    func eventsAndBarrier() async {
        let queue = OperationQueue()
        let events = Shared<[String]>([])
        let operation = AsyncBlockOperation { await Task.yield() }
        operation.name = "body"
        let subscription = queue.addEventHandler { event in
            if event.operation === operation { events.append("\(event.kind)") }
        }
        defer { subscription.cancel() }
        let barrierSaw = Shared<Bool?>(nil)
        queue.addOperation(operation)
        queue.addBarrierBlock { barrierSaw.update { $0 = operation.isFinished } }
        await queue.waitUntilAllOperationsAreFinished()
        #expect(events() == ["enqueued", "started", "finished(wasCancelled: false)"])
        #expect(barrierSaw() == true)
    }

    @Test("a suspended queue starts no body; queue progress counts async operations")
    func suspensionAndProgress() async {
        let queue = OperationQueue()
        queue.progress.totalUnitCount = 3
        queue.isSuspended = true
        let ran = Shared(0)
        for _ in 0..<3 { queue.addOperation(AsyncBlockOperation { ran.increment() }) }
        #expect(queue.operations.allSatisfy { !$0.isExecuting })
        #expect(ran() == 0)
        queue.isSuspended = false
        await queue.waitUntilAllOperationsAreFinished()
        #expect(ran() == 3)
        #expect(queue.progress.completedUnitCount == 3)
    }

    @Test("the task's priority follows the operation's quality of service (never below its queue's)")
    func taskPriorityFollowsQoS() async {
        // Read through a gate: awaiting `value` from this (medium) task would escalate it.
        func priority(own: QualityOfService?, queue queueQuality: QualityOfService?) async -> TaskPriority? {
            let seen = Shared<TaskPriority?>(nil)
            let done = TestGate()
            let operation = AsyncBlockOperation { seen.update { $0 = Task.currentPriority }; done.open() }
            if let own { operation.qualityOfService = own }
            let queue = OperationQueue()
            if let queueQuality { queue.qualityOfService = queueQuality }
            queue.addOperation(operation)
            await done.waitIgnoringCancellation()
            return seen()
        }
        #expect(await priority(own: .userInitiated, queue: nil) == .high)
        #expect(await priority(own: .utility, queue: .utility) == .low)
        // A queue nobody gave a quality of service runs at the default, whatever its getter reads.
        #expect(await priority(own: nil, queue: nil) == .medium)
        #expect(await priority(own: .background, queue: .userInitiated) == .high)
    }

    @Test("waitReasons says a suspended body is executing")
    func waitReasonsOfRunningBody() async {
        let gate = TestGate()
        let entered = TestGate()
        let operation = AsyncBlockOperation { entered.open(); await gate.waitIgnoringCancellation() }
        OperationQueue().addOperation(operation)
        await entered.waitIgnoringCancellation()
        #expect(operation.waitReasons == [.executing])
        gate.open()
        await operation.waitUntilFinished()
        #expect(operation.waitReasons == [.finished])
    }

    @Test("started by hand outside a queue, it runs and finishes after start() returned")
    func startedByHand() async throws {
        let gate = TestGate()
        let operation = AsyncBlockOperation { await gate.waitIgnoringCancellation(); return "done" }
        operation.start()
        #expect(operation.isExecuting)
        #expect(!operation.isFinished)
        gate.open()
        #expect(try await operation.value == "done")
    }

    @Test("a TaskOperation subclass overrides one async method")
    func subclass() async throws {
        final class Fetch: TaskOperation<String>, @unchecked Sendable {
            let input: Int
            init(_ input: Int) { self.input = input; super.init() }
            override func run() async throws -> String {
                await Task.yield()
                try Task.checkCancellation()
                return "item \(input)"
            }
        }
        let queue = OperationQueue()
        let fetches = (0..<5).map(Fetch.init)
        queue.addOperations(fetches, waitUntilFinished: false)
        var values: [String] = []
        for fetch in fetches { values.append(try await fetch.value) }
        #expect(values == (0..<5).map { "item \($0)" })
    }

    @Test("the tutorials' own AsyncOperation class still compiles and works beside ours")
    func tutorialAsyncOperationName() async {
        // The name every tutorial gives its hand-written base class.
        class AsyncOperation: Operation, @unchecked Sendable {
            enum State: String { case ready, executing, finished
                var keyPath: String { "is" + rawValue.capitalized } }
            private let lock = NSLock()
            private var _state = State.ready
            var state: State {
                get { lock.withLock { _state } }
                set {
                    willChangeValue(forKey: newValue.keyPath); willChangeValue(forKey: state.keyPath)
                    lock.withLock { _state = newValue }
                    didChangeValue(forKey: state.keyPath); didChangeValue(forKey: "isExecuting")
                    didChangeValue(forKey: "isFinished")
                }
            }
            override var isAsynchronous: Bool { true }
            override var isExecuting: Bool { state == .executing }
            override var isFinished: Bool { state == .finished }
            override func start() {
                if isCancelled { state = .finished; return }
                state = .executing
                onNewThread { self.state = .finished }
            }
        }
        let operation = AsyncOperation()
        let queue = OperationQueue()
        queue.addOperation(operation)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(operation.isFinished)
    }
}

@Suite("Async bodies hand their slot on without a worker hop", .timeLimit(.minutes(1)))
struct InlineStartTests {
    @Test("after a body ends, a synchronous operation next in line still runs on a queue worker")
    func synchronousNextRunsOnWorker() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let gate = TestGate()
        let first = AsyncBlockOperation { await gate.waitIgnoringCancellation() }
        let sawQueue = Shared<Bool?>(nil)
        let second = BlockOperation { sawQueue.update { $0 = OperationQueue.current === queue } }
        let third = AsyncBlockOperation { OperationQueue.current === queue }
        queue.addOperations([first, second, third], waitUntilFinished: false)
        gate.open()
        await queue.waitUntilAllOperationsAreFinished()
        #expect(sawQueue() == true)
        #expect(try! await third.value)
    }

    @Test("a chain of async bodies on a limit-1 queue runs one at a time, in order, with started events")
    func asyncChainInline() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let meter = ConcurrencyMeter()
        let order = Shared<[String]>([])
        let started = Shared(0)
        let subscription = queue.addEventHandler { event in
            if case .started = event.kind { started.increment() }
        }
        defer { subscription.cancel() }
        let operations = (0..<50).map { index in
            AsyncBlockOperation {
                meter.enter()
                await Task.yield()
                order.append("\(index)")
                meter.leave()
            }
        }
        queue.addOperations(operations, waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(meter.most == 1)
        #expect(order() == (0..<50).map(String.init))
        #expect(started() == 50)
    }

    @Test("with an underlying queue, the next async operation is started there, not on the thread the last body ended on")
    func underlyingQueueRespected() async {
        let underlying = DispatchQueue(label: "underlying")
        underlying.setSpecific(key: underlyingKey, value: 7)
        let queue = OperationQueue()
        queue.underlyingQueue = underlying
        queue.maxConcurrentOperationCount = 1
        let first = AsyncBlockOperation { await Task.yield() }
        let second = AsyncBlockOperation {}
        let startedOn = Shared<[Int?]>([])
        let observation = second.observe(\.isExecuting, options: [.new]) { _, change in
            if change.newValue == true { startedOn.update { $0.append(DispatchQueue.getSpecific(key: underlyingKey)) } }
        }
        queue.addOperations([first, second], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(startedOn() == [7])
        _ = observation
    }

    @Test("OperationQueue.current is the queue while an async operation is being started after another's body")
    func currentDuringInlineStart() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let first = AsyncBlockOperation { await Task.yield() }
        let second = AsyncBlockOperation {}
        let current = Shared<[Bool]>([])
        let observation = second.observe(\.isExecuting, options: [.new]) { _, change in
            if change.newValue == true { current.update { $0.append(OperationQueue.current === queue) } }
        }
        queue.addOperations([first, second], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(current() == [true])
        _ = observation
    }
}

enum TaskLocalProbe {
    @TaskLocal static var value: String?
}

@Suite("Task-local values and an async body's task")
struct TaskLocalInheritanceTests {
    @Test("started by hand inside a task-local scope, a body sees its values; started by its queue, none of the starting thread's")
    func byHandAndByQueue() async throws {
        let byHand = AsyncBlockOperation { () async -> String? in TaskLocalProbe.value }
        TaskLocalProbe.$value.withValue("caller") { byHand.start() }
        #expect(try await byHand.value == "caller")

        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let first = AsyncBlockOperation { () async -> String? in TaskLocalProbe.value }
        let second = AsyncBlockOperation { () async -> String? in TaskLocalProbe.value }
        TaskLocalProbe.$value.withValue("adder") { queue.addOperations([first, second], waitUntilFinished: false) }
        #expect(try await first.value == nil)
        #expect(try await second.value == nil)
    }
}
