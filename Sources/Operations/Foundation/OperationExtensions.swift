// Where the members this library adds beyond Foundation's API live.
//
// Frameworks built on Foundation's classes declare members of their own in their
// subclasses (`finish()`, `produceOperation(_:)`, `cancel(with:)`, `errors`, `state`, …).
// A member declared in an extension of a class cannot be overridden from another module,
// so one of the same name and signature in a subclass fails to compile ("overriding
// non-open instance method outside of its defining module"). A member declared in a
// protocol extension is not overridden but shadowed: the subclass's member compiles, and
// calls through the subclass's type reach it, while calls through `Operation` reach ours.
// So every such member is declared in an extension of one of these protocols, constrained
// to the class (see "Names your subclasses may use" in MigratingFromFoundation.md).

/// The members this library adds to ``Operation`` (and so to ``BlockOperation`` and every
/// other subclass) beyond Foundation's API.
///
/// `Operation` conforms; the members are declared in `extension OperationExtensions where
/// Self: Operation`, so that a subclass may declare a member of the same name (and the
/// same signature) without `override`: it shadows this library's, which code written
/// against `Operation` still reaches. Nothing else needs to conform.
public protocol OperationExtensions: AnyObject {}

extension Operation: OperationExtensions {}

/// The members this library adds to ``OperationQueue`` beyond Foundation's API.
///
/// `OperationQueue` conforms; the members are declared in `extension
/// OperationQueueExtensions where Self: OperationQueue`, so that a subclass may declare a
/// member of the same name (and the same signature) without `override`: it shadows this
/// library's, which code written against `OperationQueue` still reaches. Nothing else
/// needs to conform.
public protocol OperationQueueExtensions: AnyObject {}

extension OperationQueue: OperationQueueExtensions {}
