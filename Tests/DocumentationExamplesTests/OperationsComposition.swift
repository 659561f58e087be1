// Sources/OperationsComposition/OperationsComposition.docc/OperationsComposition.md

import Operations
import OperationsComposition

func operationsCompositionOverview(queue: OperationQueue, compress: Operation) {
let upload = BlockOperation { /* … */ }
upload.addCondition(.noFailedDependencies)
upload.addExclusivity("network")
upload.timeout(after: .seconds(30))
let sync = GroupOperation(operations: [compress, upload])
queue.addOperation(sync)
}
