import Operations
import OperationsComposition
import Testing
import TestTraits

@Suite("Dependency cycles")
struct DependencyCycleTests {
    @Test("a two-operation cycle stops the process and names both operations", .oneExitTestAtATime)
    func twoCycle() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Operation.trapsOnDependencyCycles = true
            let a = ClosureOperation(name: "alpha"), b = ClosureOperation(name: "beta")
            b.addDependency(a)
            a.addDependency(b)
        }.map { $0.standardErrorContent.containsText("dependency cycle", "\"alpha\"", "\"beta\"") }.check()
    }

    @Test("a three-operation cycle closed against creation order lists all three", .oneExitTestAtATime)
    func threeCycle() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Operation.trapsOnDependencyCycles = true
            let a = ClosureOperation(name: "first"), b = ClosureOperation(name: "second"), c = ClosureOperation(name: "third")
            a.addDependency(b)
            b.addDependency(c)
            c.addDependency(a)
        }.map { $0.standardErrorContent.containsText("dependency cycle", "\"first\"", "\"second\"", "\"third\"") }.check()
    }

    @Test("a cycle through a barrier's hidden dependencies is detected", .oneExitTestAtATime)
    func cycleThroughBarrier() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Operation.trapsOnDependencyCycles = true
            let early = ClosureOperation(name: "early")
            let queue = suspendedQueue(holding: early)
            queue.addBarrierBlock {}
            let late = ClosureOperation(name: "late")
            queue.addOperation(late)
            early.addDependency(late)
        }.map { $0.standardErrorContent.containsText("dependency cycle", "\"early\"", "\"late\"") }.check()
    }

    @Test("by default (as on Darwin) a cycle is allowed, with a warning that names it", .oneExitTestAtATime)
    func cycleWarns() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let a = ClosureOperation(name: "left"), b = ClosureOperation(name: "right")
            b.addDependency(a)
            a.addDependency(b)
            #expect(a.dependencies == [b] && b.dependencies == [a])
            // Operations hold their dependencies: a cycle of them is also a retain cycle.
            a.removeDependency(b)
        }.map { $0.standardErrorContent.containsText("warning", "dependency cycle", "\"left\"", "\"right\"") }.check()
    }

    @Test("a cycle is broken by cancelling one of its operations (Foundation's test_DependencyCycleBreak)", .oneExitTestAtATime)
    func cycleBrokenByCancel() async {
        // In a child process: the cycle's warning goes to its standard error, not the test log.
        await #expect(processExitsWith: .success) {
            let log = Shared<[String]>([])
            let op1 = ClosureOperation(name: "op1") { _ in log.append("op1") }
            let op2 = ClosureOperation(name: "op2") { _ in log.append("op2") }
            let op3 = ClosureOperation(name: "op3") { _ in log.append("op3") }
            op1.addDependency(op2)
            op2.addDependency(op3)
            op3.addDependency(op1)
            let queue = OperationQueue()
            queue.addOperations([op1, op2, op3], waitUntilFinished: false)
            #expect(queue.operationCount == 3)
            op3.cancel()
            queue.waitUntilAllOperationsAreFinished()
            #expect(log() == ["op2", "op1"])
            #expect(op3.isFinished && op3.isCancelled)
            // Operations hold their dependencies: the cycle is also a retain cycle until broken.
            op3.removeDependency(op1)
        }
    }

    @Test("edges against creation order that form no cycle are accepted, and order holds", arguments: [1, 2, 3])
    func randomDAG(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let count = 300
        let operations = (0..<count).map { index in ClosureOperation(name: "n\(index)") }
        // A DAG over a random permutation of the creation order, inserted in random order.
        let rank = Array(0..<count).shuffled(using: &generator)
        var edges: [(Int, Int)] = []
        for _ in 0..<1_500 {
            let a = Int.random(in: 0..<count, using: &generator), b = Int.random(in: 0..<count, using: &generator)
            if rank[a] < rank[b] { edges.append((a, b)) } else if rank[b] < rank[a] { edges.append((b, a)) }
        }
        edges.shuffle(using: &generator)
        let finishOrder = Shared<[Int]>([])
        let ran = (0..<count).map { index in
            BlockOperation { finishOrder.update { $0.append(index) } }
        }
        for (before, after) in edges {
            operations[after].addDependency(operations[before])
            ran[after].addDependency(ran[before])
        }
        let queue = OperationQueue()
        queue.addOperations(ran, waitUntilFinished: true)
        var position = [Int](repeating: 0, count: count)
        for (index, operation) in finishOrder().enumerated() { position[operation] = index }
        #expect(finishOrder().count == count)
        #expect(edges.allSatisfy { position[$0.0] < position[$0.1] }, "seed \(seed): every dependency ran first")
    }

    @Test("a chain built backwards (each edge against creation order) is accepted")
    func backwardChain() {
        let operations = (0..<500).map { _ in Operation() }
        for index in stride(from: operations.count - 1, to: 0, by: -1) {
            operations[index - 1].addDependency(operations[index])
        }
        let queue = OperationQueue()
        queue.addOperations(operations, waitUntilFinished: true)
        #expect(operations.allSatisfy { $0.isFinished })
    }

    /// With `trapsOnDependencyCycles`: an edge out of a finished operation closes no cycle,
    /// so the graph must not keep `d → x` after `x` finished and report one (and trap).
    /// Forced: no race; `x` depends on `d`, is cancelled and started by hand (so it
    /// finished without waiting for `d`); then `d` is made to depend on `x`.
    @Test("a finished operation closes no dependency cycle (trapsOnDependencyCycles)", .oneExitTestAtATime)
    func noFalseCycleWithTrap() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            Operation.trapsOnDependencyCycles = true
            let x = ClosureOperation(name: "x"), d = ClosureOperation(name: "d")
            x.addDependency(d)
            x.cancel()
            x.start()
            guard x.isFinished else { fatalError("setup: x did not finish") }
            d.addDependency(x)
            guard d.isReady else { fatalError("d waits for the finished x") }
            // Each holds the other as a dependency (a retain cycle, as on Darwin): break it
            // so that the leak checker of the sanitizer runs sees nothing.
            d.removeDependency(x)
        }.map { !$0.standardErrorContent.containsText("cycle") }.check()
    }

    /// Default setting: as the test above without the trap; no "cycle" warning may be
    /// printed.
    @Test("a finished operation closes no dependency cycle (no warning)", .oneExitTestAtATime)
    func noFalseCycleWarning() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let x = ClosureOperation(name: "x"), d = ClosureOperation(name: "d")
            x.addDependency(d)
            x.cancel()
            x.start()
            d.addDependency(x)
            guard d.isReady else { fatalError("d waits for the finished x") }
            d.removeDependency(x)  // breaks the retain cycle (see the test above)
        }.map { !$0.standardErrorContent.containsText("cycle") }.check()
    }
}
