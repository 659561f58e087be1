// The `Operations` module: Foundation's Operation / BlockOperation / OperationQueue with
// Darwin's semantics on every platform.
//
// A file that writes `import Operations` instead of `import Foundation` gets everything
// Foundation has, with this module's `Operation`, `BlockOperation` and `OperationQueue`
// shadowing Foundation's (and, on Linux, an `NSObject` that supports key-value observing).
@_exported import Foundation
