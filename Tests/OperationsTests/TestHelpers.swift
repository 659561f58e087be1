// The helpers the test targets share, for every file of this one.
@_exported import OperationsTestHelpers
