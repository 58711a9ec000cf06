// The umbrella module: one import for every Coffer component.

@_exported import CofferCrypto
@_exported import CofferDatabase
@_exported import CofferDeniable
@_exported import CofferMediaCache
@_exported import CofferSecureStorage
@_exported import CofferSettings
@_exported import CofferStateMachines
@_exported import CofferWallet
