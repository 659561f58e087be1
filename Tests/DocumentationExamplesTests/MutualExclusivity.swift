// Sources/OperationsComposition/OperationsComposition.docc/MutualExclusivity.md

import OperationsComposition
import Operations

func mutualExclusivityOverview(showAlert: Operation, write: Operation, read: Operation, migrate: Operation) {
showAlert.addExclusivity("alert")
write.addExclusivity("database")                      // exclusive: alone
read.addExclusivity("database", mode: .shared)        // with other readers, never with a writer
migrate.addExclusivity("database")
migrate.addExclusivity("files")                       // both, or neither
}

func mutualExclusivityGroups(download: Operation, write: Operation) {
let sync = GroupOperation(operations: [download, write])   // write.addExclusivity("database")
sync.addExclusivity("database")                            // no deadlock: write runs inside
}
