import Foundation
import Operations
import OperationsComposition
import class Operations.OperationQueue
import class Operations.BlockOperation
import Synchronization

/// The composition rows: a group of N children against N operations on a plain queue,
/// exclusivity throughput, and what a condition costs per operation.
enum CompositionWorkloads {
    /// N empty children in one group, on a queue.
    static func group(_ n: Int) throws -> UInt64 {
        let ran = AtomicCount()
        let queue = Operations.OperationQueue()
        let start = now()
        let group = GroupOperation(operations: (0..<n).map { _ in BlockOperation { ran.increment() } })
        queue.addOperation(group)
        group.waitUntilFinished()
        let elapsed = now() - start
        try check(ran.value == n, "group: \(ran.value) of \(n) children ran")
        return elapsed
    }

    /// The same N empty operations on a plain queue.
    static func plain(_ n: Int) throws -> UInt64 {
        let ran = AtomicCount()
        let queue = Operations.OperationQueue()
        let start = now()
        queue.addOperations((0..<n).map { _ in BlockOperation { ran.increment() } }, waitUntilFinished: true)
        let elapsed = now() - start
        try check(ran.value == n, "plain: \(ran.value) of \(n) ran")
        return elapsed
    }

    /// N operations over 8 queues, each exclusive in one of 2 categories; checks that no
    /// two of a category ever overlap.
    static func exclusivity(_ n: Int) throws -> UInt64 {
        let categories = ["bench-a-\(UUID())", "bench-b-\(UUID())"]
        let running = [AtomicCount(), AtomicCount()]
        let broken = AtomicCount()
        let queues = (0..<8).map { _ in Operations.OperationQueue() }
        let operations = (0..<n).map { index in
            let category = index % 2
            let operation = BlockOperation {
                if running[category].increment() > 1 { broken.increment() }
                running[category].decrement()
            }
            operation.addExclusivity(categories[category])
            return operation
        }
        let start = now()
        for (index, operation) in operations.enumerated() { queues[index % 8].addOperation(operation) }
        for queue in queues { queue.waitUntilAllOperationsAreFinished() }
        let elapsed = now() - start
        try check(broken.value == 0, "exclusivity broken \(broken.value) times")
        return elapsed
    }

    /// N operations in one batch on a default queue, each holding one of `categories`
    /// exclusive categories (operation i holds category i % categories).
    static func categorised(_ n: Int, categories: Int) throws -> UInt64 {
        let prefix = "bench-\(UUID())-"
        return try batch(n, "categories") { operation, index in
            operation.addExclusivity(prefix + String(index % categories))
        }
    }

    /// N operations, each with one condition that holds.
    static func conditioned(_ n: Int) throws -> UInt64 {
        try batch(n, "conditions") { operation, _ in operation.addCondition(BlockCondition { _ in true }) }
    }

    /// N empty operations, each given what `attach` gives it, added in one batch to a default
    /// queue; the time from the add until all ran.
    private static func batch(_ n: Int, _ label: String, attach: (BlockOperation, Int) -> Void) throws -> UInt64 {
        let ran = AtomicCount()
        let queue = Operations.OperationQueue()
        let operations = (0..<n).map { index in
            let operation = BlockOperation { ran.increment() }
            attach(operation, index)
            return operation
        }
        let start = now()
        queue.addOperations(operations, waitUntilFinished: true)
        let elapsed = now() - start
        try check(ran.value == n, "\(label): \(ran.value) of \(n) ran")
        return elapsed
    }
}

/// An atomic count that closures can share.
final class AtomicCount: Sendable {
    private let count = Atomic<Int>(0)
    @discardableResult func increment() -> Int { count.add(1, ordering: .relaxed).newValue }
    func decrement() { count.subtract(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
