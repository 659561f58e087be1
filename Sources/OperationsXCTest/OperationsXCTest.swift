// One import for an XCTest file that tests code built on `Operations`.
//
// XCTest re-exports Foundation, so a file that imports both XCTest and Operations sees
// `Operation`, `BlockOperation` and `OperationQueue` twice ("ambiguous use"). Scoped imports
// win over whole-module ones, and re-exported scoped imports still do in the importing
// file: `import OperationsXCTest` gives XCTest, Foundation and the whole of Operations, with
// this module's classes chosen.
@_exported import XCTest
@_exported import Operations
@_exported import class Operations.Operation
@_exported import class Operations.BlockOperation
@_exported import class Operations.OperationQueue
#if !canImport(ObjectiveC)
// On Linux the module's NSObject (with key-value observing) shadows Foundation's.
@_exported import class Operations.NSObject
#endif
