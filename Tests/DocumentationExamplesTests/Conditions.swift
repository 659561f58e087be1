// Sources/OperationsComposition/OperationsComposition.docc/Conditions.md

import Operations
import OperationsComposition

/// What the blocks use from the article's story.
private actor Network {
    var isReachable: Bool { true }
}
private let network = Network()
private actor Account {
    var isSignedIn: Bool { true }
}
private let account = Account()
private enum SignInError: Error { case required }
private final class SignInOperation: Operation, @unchecked Sendable {}

func conditionsOverview(queue: OperationQueue, compress: Operation) {
let upload = BlockOperation { /* … */ }
upload.addDependency(compress)
upload.addCondition(.noFailedDependencies)                        // don't upload a failed compression
upload.addCondition(BlockCondition(name: "online") { _ in await network.isReachable })
queue.addOperation(upload)
}

struct SignedIn: OperationCondition {
    func dependency(for operation: Operation) -> Operation? { SignInOperation() }
    func evaluate(for operation: Operation) async throws {
        guard await account.isSignedIn else { throw SignInError.required }
    }
}
