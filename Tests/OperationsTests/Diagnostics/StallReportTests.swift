import Operations
import OperationsComposition
import OperationsTestSupport
import Testing
import TestTraits

/// Stall reports and the queue-wide wait description. The diagnostics handler and the
/// report delay are process-wide: these tests set them one at a time (serialized), look
/// only at messages that name their own operations, and put them back.
@Suite("Stall reports and queue-wide wait reasons", .serialized)
struct StallReportTests {
    /// Captures diagnostics that mention `marker`; opens `reported` on the first stall.
    final class Capture: Sendable {
        let marker: String
        let messages = Shared<[OperationDiagnostic]>([])
        let reported = BlockingSignal()

        init(marker: String) { self.marker = marker }

        var stalls: [String] { messages().filter { $0.kind == .stall }.map(\.message) }

        /// Installs the capture (by default with delay zero: reports at the moment a wait
        /// begins), runs `body`, puts the previous settings back.
        func during(delay: Duration = .zero, _ body: () -> Void) {
            let previous = (OperationDiagnostic.handler, OperationDiagnostic.stallReportDelay)
            OperationDiagnostic.stallReportDelay = delay
            OperationDiagnostic.handler = { [self] diagnostic in
                guard diagnostic.message.contains(marker) else { return previous.0(diagnostic) }
                messages.update { $0.append(diagnostic) }
                if diagnostic.kind == .stall { reported.open() }
            }
            body()
            OperationDiagnostic.handler = previous.0
            OperationDiagnostic.stallReportDelay = previous.1
        }
    }

    /// Runs `body` with a fresh queue while the diagnostics naming `marker` are captured (see
    /// `Capture.during`); returns the capture, to look at once the queue's work is done.
    @discardableResult
    func capturingReports(
        naming marker: String, delay: Duration = .zero, _ body: (Capture, OperationQueue) -> Void
    ) -> Capture {
        let capture = Capture(marker: marker)
        capture.during(delay: delay) { body(capture, OperationQueue()) }
        return capture
    }

    /// Runs `wait` on another thread; the returned gate opens when it returns.
    func waitInBackground(_ wait: @escaping @Sendable () -> Void) -> BlockingSignal {
        let returned = BlockingSignal()
        onNewThread {
            wait()
            returned.open()
        }
        return returned
    }

    /// Runs `wait` on another thread until `capture` has its stall report, then ends the
    /// wait with `end` and checks that it returns.
    func expectReported(
        by capture: Capture, whileWaiting wait: @escaping @Sendable () -> Void, endingIt end: () -> Void,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let returned = waitInBackground(wait)
        #expect(capture.reported.wait(), sourceLocation: sourceLocation)
        end()
        #expect(returned.wait(), sourceLocation: sourceLocation)
    }

    /// Adds `operations` to `queue` in one go while it is suspended, then resumes it: they
    /// wait in that order before any of them starts.
    func addInOrder(_ operations: [Operation], to queue: OperationQueue) {
        queue.isSuspended = true
        queue.addOperations(operations, waitUntilFinished: false)
        queue.isSuspended = false
    }

    /// Checks that the first stall report `capture` holds mentions each of `parts`.
    func expectFirstStall(in capture: Capture, mentions parts: String..., sourceLocation: SourceLocation = #_sourceLocation) {
        let message = capture.stalls.first ?? ""
        for part in parts {
            #expect(message.contains(part), "\(message)", sourceLocation: sourceLocation)
        }
    }

    /// Names `queue`, suspends it, and adds to it an operation named `heldName`, which it holds.
    func suspend(_ queue: OperationQueue, named name: String, holding heldName: String) {
        queue.name = name
        queue.isSuspended = true
        queue.addOperation(BlockOperation {}.named(heldName))
    }

    @Test("a dependency cycle: reported once with the cycle, the wait returns once one is cancelled")
    func cycle() {
        capturingReports(naming: "cycle-a") { capture, queue in
            let a = BlockOperation {}.named("cycle-a"), b = BlockOperation {}.named("cycle-b")
            a.addDependency(b)
            b.addDependency(a)
            queue.addOperations([a, b], waitUntilFinished: false)
            expectReported(by: capture, whileWaiting: { queue.waitUntilAllOperationsAreFinished() }, endingIt: { a.cancel() })
            #expect(capture.messages().contains { $0.kind == .dependencyCycle })
            #expect(capture.stalls.count == 1)
            expectFirstStall(in: capture, mentions: "waitUntilAllOperationsAreFinished()", "dependency cycle", "\"cycle-b\"")
            // The cycle is also a retain cycle.
            b.removeDependency(a)
        }
    }

    @Test("a dependency in no queue")
    func dependencyInNoQueue() {
        capturingReports(naming: "lonely") { capture, queue in
            let lonely = BlockOperation {}.named("lonely")
            let waiting = BlockOperation {}.named("waits-for-lonely")
            waiting.addDependency(lonely)
            queue.addOperation(waiting)
            expectReported(by: capture, whileWaiting: { waiting.waitUntilFinished() }, endingIt: { lonely.start() })
            expectFirstStall(in: capture, mentions: "waitUntilFinished() on operation \"waits-for-lonely\"", "\"lonely\": it is in no queue")
        }
    }

    @Test("a suspended queue, and one report for addOperations(_:waitUntilFinished: true)")
    func suspendedQueue() {
        capturingReports(naming: "suspended-queue") { capture, queue in
            queue.name = "suspended-queue"
            queue.isSuspended = true
            let operations = (0..<3).map { BlockOperation {}.named("held \($0)") }
            expectReported(
                by: capture, whileWaiting: { queue.addOperations(operations, waitUntilFinished: true) },
                endingIt: { queue.isSuspended = false })
            #expect(capture.stalls.count == 1)
            expectFirstStall(in: capture, mentions: "3 operations", "is suspended")
        }
    }

    @Test("with a delay, the waiting thread looks again when its timed wait expires, and reports once")
    func afterDelay() {
        // No assertion on time: the report must come at some point while the wait lasts.
        capturingReports(naming: "delayed", delay: .milliseconds(10)) { capture, queue in
            suspend(queue, named: "delayed", holding: "held")
            expectReported(
                by: capture, whileWaiting: { queue.waitUntilAllOperationsAreFinished() }, endingIt: { queue.isSuspended = false })
            #expect(capture.stalls.count == 1)
            #expect(capture.stalls.first?.contains("has waited") == true)
        }
    }

    @Test("a wait for one operation is reported while its queue keeps finishing others")
    func reportedWhileTheQueueProgresses() {
        capturingReports(naming: "busy-stuck", delay: .milliseconds(10)) { capture, queue in
            queue.maxConcurrentOperationCount = 2
            let lonely = BlockOperation {}.named("busy-lonely")
            let stuck = BlockOperation {}.named("busy-stuck")
            stuck.addDependency(lonely)
            queue.addOperation(stuck)
            // Other work that keeps finishing in the same queue until the report is made.
            let keepGoing = Shared(true)
            @Sendable func more() {
                queue.addOperation { if keepGoing() { more() } }
            }
            more()
            expectReported(by: capture, whileWaiting: { stuck.waitUntilFinished() }) {
                keepGoing.update { $0 = false }
                lonely.start()
            }
            #expect(capture.stalls.first?.contains("\"busy-lonely\"") == true)
            queue.waitUntilAllOperationsAreFinished()
        }
    }

    @Test("a limit of 0")
    func limitZero() {
        capturingReports(naming: "limit-zero") { capture, queue in
            queue.name = "limit-zero"
            queue.maxConcurrentOperationCount = 0
            queue.addOperation(BlockOperation {}.named("never started"))
            expectReported(
                by: capture, whileWaiting: { queue.waitUntilAllOperationsAreFinished() },
                endingIt: { queue.maxConcurrentOperationCount = 1 })
            #expect(capture.stalls.first?.contains("maxConcurrentOperationCount is 0") == true)
        }
    }

    @Test("no report while the operations can make progress")
    func noFalseAlarm() {
        capturingReports(naming: "busy") { capture, queue in
            queue.name = "busy"
            queue.maxConcurrentOperationCount = 1
            let started = BlockingSignal(), release = BlockingSignal()
            let first = BlockOperation { started.open(); release.wait() }.named("busy first")
            let second = BlockOperation {}.named("busy second")
            second.addDependency(first)
            queue.addOperations([first, second], waitUntilFinished: false)
            #expect(started.wait())
            let returned = waitInBackground { queue.waitUntilAllOperationsAreFinished() }
            // The report, if any, is made before the waiting thread blocks; the queue-wide
            // description (asked here) makes the same analysis.
            #expect(!queue.waitDescription.contains("cannot make progress"))
            release.open()
            #expect(returned.wait())
            #expect(capture.stalls.isEmpty)
        }
    }

    @Test("the queue-wide description lists every pending operation with its reasons")
    func queueDescription() {
        let queue = OperationQueue()
        queue.name = "described"
        queue.isSuspended = true
        let outside = BlockOperation {}.named("outside")
        let first = BlockOperation {}.named("first")
        let second = BlockOperation {}.named("second")
        second.addDependency(outside)
        queue.addOperations([first, second], waitUntilFinished: false)
        let pending = queue.pendingOperations
        #expect(pending.map(\.operation) == [first, second])
        #expect(pending[0].reasons == [.queueSuspended(queue)])
        #expect(pending[1].reasons == [.dependency(outside, isInQueue: false), .queueSuspended(queue)])
        let lines = queue.waitDescription.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(lines)")
        #expect(lines[0].contains("queue \"described\"") && lines[0].contains("suspended") && lines[0].contains("2 operations not finished"))
        #expect(lines[1].contains("\"first\"") && lines[1].contains("is suspended"))
        #expect(lines[2].contains("\"second\"") && lines[2].contains("waits for operation \"outside\""))
        #expect(lines[3].hasPrefix("cannot make progress:"))
        queue.cancelAllOperations()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("a chain of 5,000 operations waiting for one in no queue is analysed without recursion")
    func longChain() {
        let queue = OperationQueue()
        let root = BlockOperation {}.named("chain root")
        var previous: Operation = root
        var chain: [Operation] = []
        for index in 0..<5_000 {
            let next = BlockOperation {}.named("link \(index)")
            next.addDependency(previous)
            chain.append(next)
            previous = next
        }
        queue.addOperations(chain, waitUntilFinished: false)
        let description = queue.waitDescription
        #expect(description.contains("cannot make progress: \"link 0\" waits on \"chain root\": it is in no queue"))
        #expect(description.contains("and 4980 more"))
        root.start()
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("a programmer error goes through the handler before the trap", .oneExitTestAtATime)
    func misuseThroughHandler() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            OperationDiagnostic.handler = { diagnostic in
                FileHandle.standardError.write(Data("HANDLER \(diagnostic.kind): \(diagnostic.message)\n".utf8))
            }
            let operation = Operation()
            operation.name = "self-dependent"
            operation.addDependency(operation)
        }.map { $0.standardErrorContent.containsText("HANDLER misuse:", "\"self-dependent\"") }.check()
    }

    @Test("an overridden isFinished that reads true but was never announced is named in waitDescription and in the stall report")
    func finishedWithoutAnnouncement() {
        /// Darwin's asynchronous operation with `@objc dynamic var state` ported to Linux,
        /// where nothing announces `"state"` for it.
        final class Unannounced: Operation, @unchecked Sendable {
            enum State { case ready, executing, finished }
            private let lock = NSLock()
            private var _state = State.ready
            let finished = BlockingSignal()
            var state: State {
                get { lock.withLock { _state } }
                set { lock.withLock { _state = newValue } }
            }
            override class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> {
                ["isReady", "isExecuting", "isFinished"].contains(key) ? ["state"] : super.keyPathsForValuesAffectingValue(forKey: key)
            }
            override var isExecuting: Bool { state == .executing }
            override var isFinished: Bool { state == .finished }
            override var isAsynchronous: Bool { true }
            override func start() {
                state = .executing
                Thread.detachNewThread { [self] in
                    state = .finished
                    finished.open()
                }
            }
        }
        capturingReports(naming: "unannounced") { capture, queue in
            let operation = Unannounced()
            operation.name = "unannounced"
            queue.addOperation(operation)
            #expect(operation.finished.wait())
            #expect(operation.waitDescription.contains("isFinished reads true but was never announced"))
            expectReported(by: capture, whileWaiting: { queue.waitUntilAllOperationsAreFinished() }) {
                #expect(capture.stalls.first?.contains("isFinished reads true but was never announced") == true)
                // Announced at last: the queue lets it go.
                operation.willChangeValue(forKey: "state")
                operation.didChangeValue(forKey: "state")
            }
        }
    }

    @Test("an operation whose base finish is still being announced is not named as finished without an announcement")
    func baseFinishBeingAnnouncedIsNoMisuse() throws {
        try #require(WorkerPausePoints.arePassed, "the engine passes its pause points in debug builds only")
        let queue = OperationQueue()
        queue.name = "base-finish-window queue"
        let operation = BlockOperation {}.named("base-finish-window")
        let paused = BlockingSignal()
        let resume = BlockingSignal()
        let id = WorkerPausePoints.baseFinishMade.add { pausedQueue, finishing in
            guard pausedQueue === queue, finishing === operation else { return }
            paused.open()
            _ = resume.wait()
        }
        defer { WorkerPausePoints.baseFinishMade.remove(id) }
        // Watched, so that its finish takes the announced path.
        let observation = operation.observe(\.isFinished) { _, _ in }
        queue.addOperation(operation)
        #expect(paused.wait())
        // The worker stands between the base finish and its announcement: isFinished reads
        // true, and the engine is about to process it.
        #expect(operation.isFinished)
        #expect(operation.waitReasons == [.executing], "\(operation.waitReasons)")
        #expect(!queue.waitDescription.contains("never announced"), "\(queue.waitDescription)")
        resume.open()
        operation.waitUntilFinished()
        observation.invalidate()
    }

    @Test("a subclass that calls super.start() and reads isFinished true later without announcing it is named in waitDescription")
    func finishedAfterBaseFinishWithoutAnnouncement() throws {
        try #require(WorkerPausePoints.arePassed, "the engine passes its pause points in debug builds only")
        /// The frameworks' pattern (`super.start()`, work begun in `main()`), with the
        /// announcement of the subclass's own finish forgotten. Its work ends once `go` opens.
        final class Forgetful: Operation, @unchecked Sendable {
            private let done = Shared(false)
            let go = BlockingSignal()
            let finished = BlockingSignal()
            override var isFinished: Bool { done() }
            override func main() {
                Thread.detachNewThread { [self] in
                    _ = go.wait()
                    done.update { $0 = true }
                    finished.open()
                }
            }
        }
        let queue = OperationQueue()
        let operation = Forgetful()
        operation.name = "forgetful"
        // Its work ends once the worker is done with its start (and with the base finish).
        let id = WorkerPausePoints.betweenOperations.add { pausedQueue, _ in
            if pausedQueue === queue { operation.go.open() }
        }
        defer { WorkerPausePoints.betweenOperations.remove(id) }
        queue.addOperation(operation)
        #expect(operation.finished.wait())
        #expect(operation.waitReasons == [.finishedWithoutAnnouncement], "\(operation.waitReasons)")
        #expect(queue.waitDescription.contains("\"forgetful\": isFinished reads true but was never announced"), "\(queue.waitDescription)")
        operation.willChangeValue(forKey: "isFinished")
        operation.didChangeValue(forKey: "isFinished")
        operation.waitUntilFinished()
    }

    /// Runs `wait` in a task; returns the task (to cancel) and a gate that opens when the
    /// task's body has returned.
    func awaitInBackground(_ wait: @escaping @Sendable () async -> Void) -> (Task<Void, Never>, BlockingSignal) {
        let returned = BlockingSignal()
        let task = Task.detached {
            await wait()
            returned.open()
        }
        return (task, returned)
    }

    /// Runs `wait` in a task until `capture` has its stall report, runs `check`, then cancels
    /// the task and checks that its body returns.
    func expectReported(
        by capture: Capture, whileAwaiting wait: @escaping @Sendable () async -> Void, _ check: () -> Void,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let (task, returned) = awaitInBackground(wait)
        #expect(capture.reported.wait(), sourceLocation: sourceLocation)
        check()
        task.cancel()
        #expect(returned.wait(), sourceLocation: sourceLocation)
    }

    @Test("await value of an operation whose upstream is in no queue: reported, naming the upstream")
    func awaitValueReported() {
        capturingReports(naming: "async-upstream") { capture, queue in
            let upstream = BlockOperation {}.named("async-upstream")
            let downstream = ValueBlockOperation { 1 }.named("async-downstream")
            downstream.addDependency(upstream)
            queue.addOperation(downstream)
            expectReported(by: capture, whileAwaiting: { _ = try? await downstream.value }) {
                #expect(capture.stalls.first?.contains("\"async-upstream\"") == true)
                #expect(capture.stalls.first?.contains("in no queue") == true)
            }
            // Cancelling an operation in no queue does not finish it: nothing would start it.
            upstream.start()
            queue.waitUntilAllOperationsAreFinished()
        }
    }

    @Test("await waitUntilFinished() of an operation in no queue: reported")
    func awaitWaitUntilFinishedReported() {
        capturingReports(naming: "async-alone") { capture, _ in
            let operation = BlockOperation {}.named("async-alone")
            expectReported(by: capture, whileAwaiting: { await operation.waitUntilFinished() }) {
                #expect(capture.stalls.first?.contains("awaiting operation \"async-alone\"") == true)
            }
        }
    }

    @Test("await waitUntilAllOperationsAreFinished() on a suspended queue: reported")
    func awaitQueueReported() {
        capturingReports(naming: "async-suspended") { capture, queue in
            suspend(queue, named: "async-suspended", holding: "async-suspended work")
            expectReported(by: capture, whileAwaiting: { await queue.waitUntilAllOperationsAreFinished() }) {
                #expect(capture.stalls.first?.contains("is suspended") == true)
            }
            queue.isSuspended = false
            queue.waitUntilAllOperationsAreFinished()
        }
    }

    @Test("a loop over results(adding:) whose stages wait for an upstream in no queue: reported")
    func resultsLoopReported() {
        capturingReports(naming: "async-forgotten") { capture, queue in
            let forgotten = ValueBlockOperation { 2 }.named("async-forgotten")
            let stage = forgotten.then { $0 * 2 }
            let loop: @Sendable () async -> Void = {
                do {
                    for try await _ in queue.results(adding: [stage]) {}
                } catch {}
            }
            expectReported(by: capture, whileAwaiting: loop) {
                #expect(capture.stalls.first?.contains("a loop over results(adding:)") == true)
            }
            forgotten.start()
            queue.waitUntilAllOperationsAreFinished()
        }
    }

    @Test("an async wait that cannot make progress is reported after the delay, by the watch's timer")
    func awaitReportedAfterDelay() {
        capturingReports(naming: "async-delayed", delay: .milliseconds(50)) { capture, _ in
            let operation = BlockOperation {}.named("async-delayed")
            expectReported(by: capture, whileAwaiting: { await operation.waitUntilFinished() }) {
                #expect(capture.stalls.count == 1)
                #expect(capture.stalls.first?.contains("has waited") == true)
            }
        }
    }

    @Test("await value of an operation that is itself in no queue: reported, saying so")
    func awaitValueInNoQueueReported() {
        capturingReports(naming: "async-unqueued") { capture, _ in
            let operation = ValueBlockOperation { 3 }.named("async-unqueued")
            expectReported(by: capture, whileAwaiting: { _ = try? await operation.value }) {
                expectFirstStall(in: capture, mentions: "awaiting operation \"async-unqueued\"", "\"async-unqueued\": it is in no queue")
            }
        }
    }

    @Test("enqueue(_:) waiting for room in a full queue that is suspended: reported")
    func enqueueReported() {
        capturingReports(naming: "async-full") { capture, queue in
            suspend(queue, named: "async-full", holding: "async-full first")
            queue.capacity = 1
            expectReported(by: capture, whileAwaiting: { _ = try? await queue.enqueue(BlockOperation {}.named("async-full second")) }) {
                expectFirstStall(in: capture, mentions: "enqueue(_:) on queue \"async-full\"", "is suspended")
            }
            queue.isSuspended = false
            queue.waitUntilAllOperationsAreFinished()
        }
    }

    @Test("no report for an async wait on an operation that is running")
    func awaitNoFalseAlarm() {
        capturingReports(naming: "async-busy") { capture, queue in
            let started = BlockingSignal(), release = BlockingSignal()
            let operation = ValueBlockOperation { started.open(); release.wait(); return 1 }.named("async-busy")
            queue.addOperation(operation)
            #expect(started.wait())
            let (_, returned) = awaitInBackground { _ = try? await operation.value }
            release.open()
            #expect(returned.wait())
            #expect(capture.stalls.isEmpty)
        }
    }

    @Test("several async waits at once, with a delay: one timer reports each of them once")
    func severalAwaitsReportedOnce() {
        capturingReports(naming: "async-several", delay: .milliseconds(20)) { capture, queue in
            suspend(queue, named: "async-several queue", holding: "async-several held")
            let alone = BlockOperation {}.named("async-several alone")
            let waits = [
                awaitInBackground { await queue.waitUntilAllOperationsAreFinished() },
                awaitInBackground { await alone.waitUntilFinished() },
                awaitInBackground { await alone.waitUntilFinished() },
            ]
            // The gate opens once per report.
            for _ in waits { #expect(capture.reported.wait()) }
            for (task, returned) in waits {
                task.cancel()
                #expect(returned.wait())
            }
            let stalls = capture.stalls
            #expect(stalls.count == 3, "\(stalls)")
            #expect(stalls.filter { $0.contains("waitUntilAllOperationsAreFinished()") }.count == 1, "\(stalls)")
            #expect(stalls.filter { $0.contains("awaiting operation \"async-several alone\"") }.count == 2, "\(stalls)")
            queue.isSuspended = false
            queue.waitUntilAllOperationsAreFinished()
        }
    }

    /// Adds `first` and then `later` (made from the marker's names) to a serial queue, where
    /// `first` waits for `later`: checks that the wait is reported as a deadlock naming both,
    /// then gives the queue a second slot to end it.
    func checkWaitForLaterIsReportedAsDeadlock<Later: Operation>(
        marker: String, later makeLater: () -> Later, first makeFirst: (Later) -> Operation
    ) {
        let capture = capturingReports(naming: marker) { capture, queue in
            queue.maxConcurrentOperationCount = 1
            queue.name = "\(marker) queue"
            let later = makeLater()
            later.name = "\(marker) later"
            let first = makeFirst(later)
            first.name = "\(marker) first"
            addInOrder([first, later], to: queue)
            #expect(capture.reported.wait())
            // A second slot ends it.
            queue.maxConcurrentOperationCount = 2
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(capture.stalls.contains { $0.contains("deadlock") && $0.contains("first") && $0.contains("later") }, "\(capture.stalls)")
    }

    @Test("an operation that waits for one behind it on its own serial queue is reported as a deadlock, naming both")
    func waitForLaterOnOwnSerialQueue() {
        checkWaitForLaterIsReportedAsDeadlock(marker: "deadlock-probe", later: { BlockOperation {} }) { later in
            BlockOperation { later.waitUntilFinished() }
        }
    }

    @Test("an async body that awaits one behind it on its own serial queue is reported as a deadlock, naming both")
    func asyncAwaitForLaterOnOwnSerialQueue() {
        checkWaitForLaterIsReportedAsDeadlock(
            marker: "async-deadlock-probe", later: { AsyncBlockOperation { () async -> Int in 1 } }
        ) { later in
            AsyncBlockOperation { () async throws -> Int in try await later.value }
        }
    }

    @Test("a task a body spawns and does not wait for is not the body waiting: no deadlock reported")
    func spawnedTaskIsNotTheBody() {
        let capture = capturingReports(naming: "spawn-probe") { capture, queue in
            queue.maxConcurrentOperationCount = 1
            queue.name = "spawn-probe queue"
            let release = TestGate(), spawnedAwaited = BlockingSignal()
            let later = AsyncBlockOperation { () async -> Int in 1 }
            later.name = "spawn-probe later"
            let first = AsyncBlockOperation { () async -> Int in
                // Fire and forget: the body does not wait for it.
                Task {
                    _ = try? await later.value
                    spawnedAwaited.open()
                }
                await release.wait()
                return 0
            }
            first.name = "spawn-probe first"
            addInOrder([first, later], to: queue)
            // The spawned task's wait has begun (and any report was made as it began).
            #expect(eventually { later._finishWaiterCount > 0 })
            release.open()
            #expect(spawnedAwaited.wait())
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(capture.stalls.isEmpty, "\(capture.stalls)")
    }

    @Test("an async body that awaits its own queue's waitUntilAllOperationsAreFinished() is reported as a deadlock")
    func asyncAwaitForOwnQueue() {
        let capture = capturingReports(naming: "own-queue-probe") { capture, queue in
            queue.name = "own-queue-probe queue"
            let release = BlockingSignal()
            let waiting = AsyncBlockOperation { () async -> Int in
                await OperationQueue.current!.waitUntilAllOperationsAreFinished()
                return 1
            }
            waiting.name = "own-queue-probe waiting"
            waiting.completionBlock = { release.open() }
            queue.addOperation(waiting)
            #expect(capture.reported.wait())
            waiting.cancel()
            _ = release.wait(timeout: 0)
        }
        #expect(capture.stalls.contains { $0.contains("deadlock") && $0.contains("own-queue-probe waiting") }, "\(capture.stalls)")
    }

    /// A queue of two slots, both held by operations blocked in waits: "A1" waits for "D",
    /// running on another queue until `release` opens; "A2" waits (blocking, or awaiting in
    /// an async body) for "X", queued behind them. "X" waits for a slot, which "A1" frees by
    /// itself once "D" ends: a wait for a slot is a wait for any holder, so nothing is stuck.
    /// The analysis runs while both waits are known to have begun (a further wait for "X"),
    /// and the queue-wide description makes it too.
    func checkSlotWaitIsNotADeadlock(marker: String, awaitsInBody: Bool) {
        let capture = capturingReports(naming: marker) { capture, queue in
            queue.name = "\(marker) queue"
            queue.maxConcurrentOperationCount = 2
            let other = OperationQueue()
            let release = BlockingSignal()
            let d = BlockOperation { _ = release.wait() }.named("\(marker) D")
            let x = BlockOperation {}.named("\(marker) X")
            let a1 = BlockOperation { d.waitUntilFinished() }.named("\(marker) A1")
            let a2: Operation =
                awaitsInBody
                ? AsyncBlockOperation { () async -> Int in
                    await x.waitUntilFinished()
                    return 2
                }.named("\(marker) A2")
                : BlockOperation { x.waitUntilFinished() }.named("\(marker) A2")
            other.addOperation(d)
            addInOrder([a1, a2, x], to: queue)
            #expect(eventually { a1._isBlockedInWait && a2._isBlockedInWait })
            #expect(!queue.waitDescription.contains("cannot make progress"), "\(queue.waitDescription)")
            let returned = waitInBackground { x.waitUntilFinished() }
            release.open()
            #expect(returned.wait())
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(capture.stalls.isEmpty, "\(capture.stalls)")
    }

    @Test("slots held by waits are no deadlock while one of those waits ends by itself (a blocking wait)")
    func slotWaitIsNotADeadlock() {
        checkSlotWaitIsNotADeadlock(marker: "any-slot-blocking", awaitsInBody: false)
    }

    @Test("slots held by waits are no deadlock while one of those waits ends by itself (an await in an async body)")
    func slotAwaitIsNotADeadlock() {
        checkSlotWaitIsNotADeadlock(marker: "any-slot-awaiting", awaitsInBody: true)
    }

    @Test("slots held by waits that each wait for work behind them are a deadlock")
    func everySlotWaitingForWorkBehindItIsADeadlock() {
        let capture = capturingReports(naming: "every-slot") { capture, queue in
            queue.name = "every-slot queue"
            queue.maxConcurrentOperationCount = 2
            let x = BlockOperation {}.named("every-slot X")
            let y = BlockOperation {}.named("every-slot Y")
            let a1 = BlockOperation { y.waitUntilFinished() }.named("every-slot A1")
            let a2 = BlockOperation { x.waitUntilFinished() }.named("every-slot A2")
            addInOrder([a1, a2, x, y], to: queue)
            #expect(eventually { a1._isBlockedInWait && a2._isBlockedInWait })
            // A third slot ends it.
            expectReported(by: capture, whileWaiting: { x.waitUntilFinished() }, endingIt: { queue.maxConcurrentOperationCount = 3 })
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(capture.stalls.contains { $0.contains("deadlock") && $0.contains("every-slot") }, "\(capture.stalls)")
    }

    @Test("a wait for a child of a group queued behind other work is not reported: the group starts by itself")
    func childOfAQueuedGroup() {
        let capture = capturingReports(naming: "queued-group") { capture, queue in
            queue.maxConcurrentOperationCount = 1
            let release = BlockingSignal()
            let ahead = BlockOperation { _ = release.wait() }.named("queued-group ahead")
            let child = BlockOperation {}.named("queued-group child")
            let group = GroupOperation(operations: [child])
            group.name = "queued-group"
            queue.addOperations([ahead, group], waitUntilFinished: false)
            // The analysis the waits make, made here while the group is known to wait.
            #expect(!group.childQueue.waitDescription.contains("cannot make progress"), "\(group.childQueue.waitDescription)")
            let waitsBefore = child._finishWaiterCount
            let returned = waitInBackground { child.waitUntilFinished() }
            let awaited = Task { await child.waitUntilFinished() }
            #expect(eventually { child._finishWaiterCount == waitsBefore + 2 })
            release.open()
            #expect(returned.wait())
            let done = BlockingSignal()
            Task {
                await awaited.value
                done.open()
            }
            #expect(done.wait())
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(capture.stalls.isEmpty, "\(capture.stalls)")
    }

    @Test("a wait for a child of a group whose child queue the user suspended is reported")
    func childOfAGroupSuspendedByTheUser() {
        let capture = capturingReports(naming: "held-group") { capture, queue in
            let child = BlockOperation {}.named("held-group child")
            let group = GroupOperation(operations: [child])
            group.name = "held-group"
            group.isChildQueueSuspended = true
            queue.addOperation(group)
            expectReported(by: capture, whileWaiting: { child.waitUntilFinished() }, endingIt: { group.isChildQueueSuspended = false })
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(capture.stalls.first?.contains("is suspended") == true, "\(capture.stalls)")
    }

    @Test("a group holding the only slot while its child waits for work queued behind the group is reported as a deadlock")
    func groupHoldingTheSlotForItsChildsWait() {
        let capture = capturingReports(naming: "slot-group") { capture, queue in
            queue.maxConcurrentOperationCount = 1
            let behind = BlockOperation {}.named("slot-group behind")
            let child = BlockOperation { behind.waitUntilFinished() }.named("slot-group child")
            let group = GroupOperation(operations: [child])
            group.name = "slot-group"
            addInOrder([group, behind], to: queue)
            #expect(capture.reported.wait())
            // A second slot ends it.
            queue.maxConcurrentOperationCount = 2
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(capture.stalls.contains { $0.contains("deadlock") && $0.contains("slot-group child") }, "\(capture.stalls)")
    }

    /// `prefix holder` holds the category `prefix y` and waits, inside its work, for
    /// `prefix lonely`, which is in no queue. `addWaiting` adds to the queue what ends in
    /// line for a category and returns the operation to wait for: the wait (only its report
    /// is captured; the holder's own wait is reported too) must name "lonely" as the cause.
    func checkWaitInLineFollowsTo(prefix: String, waited waitedName: String, _ addWaiting: (OperationQueue) -> Operation) {
        let capture = capturingReports(naming: "\(prefix) \(waitedName)") { capture, queue in
            let lonely = BlockOperation {}.named("\(prefix) lonely")
            let holder = BlockOperation { lonely.waitUntilFinished() }.named("\(prefix) holder")
            holder.addExclusivity("\(prefix) y")
            queue.addOperation(holder)
            #expect(eventually { holder._isBlockedInWait })
            let waited = addWaiting(queue)
            expectReported(by: capture, whileWaiting: { waited.waitUntilFinished() }, endingIt: { lonely.start() })
            queue.waitUntilAllOperationsAreFinished()
        }
        #expect(capture.stalls.contains { $0.contains("\"\(prefix) lonely\": it is in no queue") }, "\(capture.stalls)")
    }

    @Test("a wait for an operation in line for a category follows the category's holder to what holds it up")
    func categoryHolderIsFollowed() {
        checkWaitInLineFollowsTo(prefix: "held-category", waited: "in line") { queue in
            let inLine = BlockOperation {}.named("held-category in line")
            inLine.addExclusivity("held-category y")
            queue.addOperation(inLine)
            return inLine
        }
    }

    @Test("a wait for an operation in line for a category follows the requests ahead of it in the line")
    func requestAheadInLineIsFollowed() {
        checkWaitInLineFollowsTo(prefix: "line-ahead", waited: "last") { queue in
            // Needs both categories: waits for "y", and in the line of "x" too.
            let ahead = BlockOperation {}.named("line-ahead first in line")
            ahead.addExclusivity("line-ahead x")
            ahead.addExclusivity("line-ahead y")
            queue.addOperation(ahead)
            // Nothing holds "x", but the request ahead takes it first.
            let last = BlockOperation {}.named("line-ahead last")
            last.addExclusivity("line-ahead x")
            queue.addOperation(last)
            return last
        }
    }
}
