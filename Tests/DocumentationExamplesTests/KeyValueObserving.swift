// Sources/Operations/Operations.docc/KeyValueObserving.md

import Operations

/// An operation that announces its state through one key.
final class OneKeyStateOperation: Operation, @unchecked Sendable {
override class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> {
    if ["isReady", "isExecuting", "isFinished"].contains(key) { return ["state"] }
    return super.keyPathsForValuesAffectingValue(forKey: key)
}

#if canImport(ObjectiveC)
@objc class func keyPathsForValuesAffectingIsReady() -> Set<String> { ["state"] }
#endif
}
