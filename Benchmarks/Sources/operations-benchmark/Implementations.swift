import Foundation
import Operations

/// The operation API the workloads use, implemented by this package's classes and by
/// Foundation's, so that one workload runs on both.
protocol OperationAPI: AnyObject, Sendable {
    func addDependency(on other: Self)
    func setPriority(_ raw: Int)
    var isCancelled: Bool { get }
}

protocol QueueAPI: Sendable, SendableMetatype {
    associatedtype Op: OperationAPI
    static var name: String { get }
    init()
    static func make(_ block: @escaping @Sendable () -> Void) -> Op
    var maxConcurrentOperationCount: Int { get nonmutating set }
    var isSuspended: Bool { get nonmutating set }
    func addBlock(_ block: @escaping @Sendable () -> Void)
    func add(_ operations: [Op], waitUntilFinished: Bool)
    func cancelAll()
    func waitAll()
}

extension Operations.BlockOperation: OperationAPI {
    func addDependency(on other: Operations.BlockOperation) { addDependency(other) }
    func setPriority(_ raw: Int) { queuePriority = Operations.Operation.QueuePriority(rawValue: raw)! }
}

extension Foundation.BlockOperation: OperationAPI {
    func addDependency(on other: Foundation.BlockOperation) { addDependency(other) }
    func setPriority(_ raw: Int) { queuePriority = Foundation.Operation.QueuePriority(rawValue: raw)! }
}

struct OursQueue: QueueAPI {
    static let name = "Operations"
    static func make(_ block: @escaping @Sendable () -> Void) -> Operations.BlockOperation { .init(block: block) }
    let queue = Operations.OperationQueue()
    var maxConcurrentOperationCount: Int {
        get { queue.maxConcurrentOperationCount }
        nonmutating set { queue.maxConcurrentOperationCount = newValue }
    }
    var isSuspended: Bool {
        get { queue.isSuspended }
        nonmutating set { queue.isSuspended = newValue }
    }
    func addBlock(_ block: @escaping @Sendable () -> Void) { queue.addOperation(block) }
    func add(_ operations: [Operations.BlockOperation], waitUntilFinished: Bool) {
        queue.addOperations(operations, waitUntilFinished: waitUntilFinished)
    }
    func cancelAll() { queue.cancelAllOperations() }
    func waitAll() { queue.waitUntilAllOperationsAreFinished() }
}

struct FoundationQueue: QueueAPI {
    static let name = "Foundation"
    static func make(_ block: @escaping @Sendable () -> Void) -> Foundation.BlockOperation { .init(block: block) }
    let queue = Foundation.OperationQueue()
    var maxConcurrentOperationCount: Int {
        get { queue.maxConcurrentOperationCount }
        nonmutating set { queue.maxConcurrentOperationCount = newValue }
    }
    var isSuspended: Bool {
        get { queue.isSuspended }
        nonmutating set { queue.isSuspended = newValue }
    }
    func addBlock(_ block: @escaping @Sendable () -> Void) { queue.addOperation(block) }
    func add(_ operations: [Foundation.BlockOperation], waitUntilFinished: Bool) {
        queue.addOperations(operations, waitUntilFinished: waitUntilFinished)
    }
    func cancelAll() { queue.cancelAllOperations() }
    func waitAll() { queue.waitUntilAllOperationsAreFinished() }
}
