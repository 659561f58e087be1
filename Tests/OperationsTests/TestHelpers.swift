// The helpers the test targets share, for every file of this one.
@_exported import OperationsTestHelpers

/// The stall-report and wait-reason tests' name for ``BlockingSignal``.
typealias Gate = BlockingSignal
