import Operations
import OperationsComposition
import Testing

@Suite("Typed data along dependencies: then and combine", .timeLimit(.minutes(1)))
struct ChainingTests {
    @Test("load → filter → output: values passed along then, sync and async stages mixed")
    func chain() async throws {
        let io = OperationQueue()
        let cpu = OperationQueue()
        let load = AsyncBlockOperation { () async -> [Int] in
            await Task.yield()
            return [3, 1, 2]
        }
        let filter = load.then { $0.sorted() }
        let output = filter.then { values async -> String in
            await Task.yield()
            return values.map(String.init).joined(separator: ",")
        }
        #expect(filter.dependencies.first === load)
        #expect(output.dependencies.first === filter)
        io.addOperation(load)
        cpu.addOperation(filter)
        io.addOperation(output)
        #expect(try await output.value == "1,2,3")
    }

    @Test("then and combine make operations in no queue")
    func notQueued() {
        let load = ValueBlockOperation { 1 }
        let next = load.then { $0 + 1 }
        #expect(next.waitReasons.contains(.notInQueue))
        let both = combine(load, next) { $0 + $1 }
        #expect(both.waitReasons.contains(.notInQueue))
    }

    @Test("combine takes any number of inputs of different types")
    func combineMany() async throws {
        let queue = OperationQueue()
        let name = ValueBlockOperation { "Ada" }
        let age = AsyncBlockOperation { () async -> Int in 36 }
        let score = ValueBlockOperation { 9.5 }
        let admin = ValueBlockOperation { true }
        let card = combine(name, age, score, admin) { name, age, score, admin in
            "\(name) \(age) \(score) \(admin)"
        }
        let asyncCard = combine(name, age) { name, age async -> String in
            await Task.yield()
            return "\(name)/\(age)"
        }
        #expect(card.dependencies.count == 4)
        queue.addOperations([card, asyncCard, name, age, score, admin], waitUntilFinished: false)
        #expect(try await card.value == "Ada 36 9.5 true")
        #expect(try await asyncCard.value == "Ada/36")
    }

    @Test("a failure travels down the chain: downstream cancelled with the upstream's error, never run")
    func errorTravels() async {
        let queue = OperationQueue()
        let ran = Shared(0)
        let load = AsyncBlockOperation<Int> { throw TestError(code: 1) }
        let filter = load.then { value -> Int in ran.increment(); return value }
        let output = filter.then { value async -> Int in ran.increment(); return value }
        queue.addOperations([load, filter, output], waitUntilFinished: false)
        await #expect(throws: TestError(code: 1)) { try await output.value }
        #expect(ran() == 0)
        guard case .cancelled(let reason as TestError)? = output.outcome, case .cancelled? = filter.outcome else {
            Issue.record("outcomes \(String(describing: filter.outcome)), \(String(describing: output.outcome))")
            return
        }
        #expect(reason.code == 1)
    }

    @Test("a cancelled input cancels combine's operation; CancellationError without a reason")
    func cancelTravels() async {
        let queue = OperationQueue()
        queue.isSuspended = true
        let a = ValueBlockOperation { 1 }
        let b = ValueBlockOperation { 2 }
        let sum = combine(a, b) { $0 + $1 }
        queue.addOperations([a, b, sum], waitUntilFinished: false)
        b.cancel()
        queue.isSuspended = false
        await #expect(throws: CancellationError.self) { try await sum.value }
        #expect(sum.outcome?.isCancelled == true)
    }

    @Test("classic addDependency keeps Foundation's behaviour: the dependent runs after a failure")
    func classicDependencyRuns() async {
        let queue = OperationQueue()
        let failing = AsyncBlockOperation<Int> { throw TestError(code: 2) }
        let ran = Shared(false)
        let dependent = BlockOperation { ran.update { $0 = true } }
        dependent.addDependency(failing)
        queue.addOperations([failing, dependent], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        #expect(ran())
    }

    @Test("releasing a long then chain that never ran does not overflow the stack")
    func longThenChainReleased() async {
        // On a thread of its own, and shorter under a sanitizer (see `longChain` in
        // `RetentionTests`).
        let stages = isSanitized ? 50_000 : 200_000
        let released = await onOwnThread {
            let first = ValueBlockOperation { 0 }
            var last: ValueOperation<Int> = first
            for _ in 0..<stages { last = last.then { $0 + 1 } }
            weak let weakLast = last
            last = first
            return weakLast == nil
        }
        #expect(released)
    }

    @Test("a ValueOperation subclass overrides execute()")
    func valueSubclass() async throws {
        final class Square: ValueOperation<Int>, @unchecked Sendable {
            let input: Int
            init(_ input: Int) { self.input = input; super.init() }
            override func execute() throws -> Int { input * input }
        }
        let square = Square(7)
        OperationQueue().addOperation(square)
        #expect(try await square.value == 49)
    }
}
