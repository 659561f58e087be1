import Foundation
import Operations
import class Operations.OperationQueue
import class Operations.BlockOperation
import Synchronization

/// The composition rows: a group of N children against N operations on a plain queue,
/// exclusivity throughput, and what a condition costs per operation.
enum CompositionWorkloads {
    /// N empty children in one group, on a queue.
    static func group(_ n: Int) throws -> UInt64 {
        let ran = Atomic<Int>(0)
        let queue = Operations.OperationQueue()
        let start = now()
        let group = GroupOperation(operations: (0..<n).map { _ in BlockOperation { ran.add(1, ordering: .relaxed) } })
        queue.addOperation(group)
        group.waitUntilFinished()
        let elapsed = now() - start
        try check(ran.load(ordering: .relaxed) == n, "group: \(ran.load(ordering: .relaxed)) of \(n) children ran")
        return elapsed
    }

    /// The same N empty operations on a plain queue.
    static func plain(_ n: Int) throws -> UInt64 {
        let ran = Atomic<Int>(0)
        let queue = Operations.OperationQueue()
        let start = now()
        queue.addOperations((0..<n).map { _ in BlockOperation { ran.add(1, ordering: .relaxed) } }, waitUntilFinished: true)
        let elapsed = now() - start
        try check(ran.load(ordering: .relaxed) == n, "plain: \(ran.load(ordering: .relaxed)) of \(n) ran")
        return elapsed
    }

    /// N operations over 8 queues, each exclusive in one of 2 categories; checks that no
    /// two of a category ever overlap.
    static func exclusivity(_ n: Int) throws -> UInt64 {
        let categories = ["bench-a-\(UUID())", "bench-b-\(UUID())"]
        let running = [Atomic<Int>(0), Atomic<Int>(0)]
        let broken = Atomic<Int>(0)
        let queues = (0..<8).map { _ in Operations.OperationQueue() }
        let operations = (0..<n).map { index in
            let category = index % 2
            let operation = BlockOperation {
                if running[category].add(1, ordering: .relaxed).newValue > 1 { broken.add(1, ordering: .relaxed) }
                running[category].subtract(1, ordering: .relaxed)
            }
            operation.addExclusivity(categories[category])
            return operation
        }
        let start = now()
        for (index, operation) in operations.enumerated() { queues[index % 8].addOperation(operation) }
        for queue in queues { queue.waitUntilAllOperationsAreFinished() }
        let elapsed = now() - start
        try check(broken.load(ordering: .relaxed) == 0, "exclusivity broken \(broken.load(ordering: .relaxed)) times")
        return elapsed
    }

    /// N operations, each with one condition that holds.
    static func conditioned(_ n: Int) throws -> UInt64 {
        let ran = Atomic<Int>(0)
        let queue = Operations.OperationQueue()
        let operations = (0..<n).map { _ in
            let operation = BlockOperation { ran.add(1, ordering: .relaxed) }
            operation.addCondition(BlockCondition { _ in true })
            return operation
        }
        let start = now()
        queue.addOperations(operations, waitUntilFinished: true)
        let elapsed = now() - start
        try check(ran.load(ordering: .relaxed) == n, "conditions: \(ran.load(ordering: .relaxed)) of \(n) ran")
        return elapsed
    }
}
