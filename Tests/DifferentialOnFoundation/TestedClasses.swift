import Foundation

// The classes the shared interpreter (`Tests/DifferentialInterpreter/`, linked into this
// folder) runs programs against: Linux's Foundation. The interpreter names only these.

typealias TestedOperation = Foundation.Operation
typealias TestedBlockOperation = Foundation.BlockOperation
typealias TestedOperationQueue = Foundation.OperationQueue
typealias TestedQualityOfService = Foundation.QualityOfService

let implementationName = "Foundation"

/// The base of operations that announce `"state"`. Linux's Foundation has no dependent keys:
/// `keyPathsForValuesAffectingValue(forKey:)` does not exist there to override, and its queue
/// hears only `"isFinished"`, `"isExecuting"` and `"isReady"`.
/// - Note: `@unchecked Sendable` as its superclass; it adds no stored state.
class StateAnnouncingOperation: Foundation.Operation, @unchecked Sendable {}
