import Operations

// The classes the shared interpreter (`Tests/DifferentialInterpreter/`, linked into this
// folder) runs programs against: this package's `Operations`. The interpreter names only these.

typealias TestedOperation = Operations.Operation
typealias TestedBlockOperation = Operations.BlockOperation
typealias TestedOperationQueue = Operations.OperationQueue
typealias TestedQualityOfService = QualityOfService

let implementationName = "Operations"

/// The base of operations that announce `"state"`: `isExecuting` and `isFinished` depend on
/// it, as in PSOperations and the "Advanced NSOperations" sample.
/// - Note: `@unchecked Sendable` as its superclass; it adds no stored state.
class StateAnnouncingOperation: Operations.Operation, @unchecked Sendable {
    override class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> {
        if ["isExecuting", "isFinished"].contains(key) { return ["state"] }
        return super.keyPathsForValuesAffectingValue(forKey: key)
    }
}
