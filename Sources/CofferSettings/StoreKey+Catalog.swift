// The catalogue's view settings as static members of `StoreKey`, so a key reads `.tilesPerRow`
// where a `StoreKey` is expected (`@Setting(.tilesPerRow)`, `settings.get(.loopVideo)`). An app
// declares its own keys the same way:
//
//     extension StoreKey where Value == Double {
//         static var playbackSpeed: StoreKey<Double> { StoreKey("playbackSpeed", default: 1) }
//     }

extension StoreKey where Value == Bool {
    /// ``SettingsCatalog/autoBackup``.
    public static var autoBackup: StoreKey<Bool> { SettingsCatalog.autoBackup }
    /// ``SettingsCatalog/backgroundBackup``.
    public static var backgroundBackup: StoreKey<Bool> { SettingsCatalog.backgroundBackup }
    /// ``SettingsCatalog/backupRequireWifi``.
    public static var backupRequireWifi: StoreKey<Bool> { SettingsCatalog.backupRequireWifi }
    /// ``SettingsCatalog/backupRequireCharging``.
    public static var backupRequireCharging: StoreKey<Bool> { SettingsCatalog.backupRequireCharging }
    /// ``SettingsCatalog/loadPreview``.
    public static var loadPreview: StoreKey<Bool> { SettingsCatalog.loadPreview }
    /// ``SettingsCatalog/loadOriginal``.
    public static var loadOriginal: StoreKey<Bool> { SettingsCatalog.loadOriginal }
    /// ``SettingsCatalog/dynamicTheme``.
    public static var dynamicTheme: StoreKey<Bool> { SettingsCatalog.dynamicTheme }
    /// ``SettingsCatalog/colorfulInterface``.
    public static var colorfulInterface: StoreKey<Bool> { SettingsCatalog.colorfulInterface }
    /// ``SettingsCatalog/dynamicLayout``.
    public static var dynamicLayout: StoreKey<Bool> { SettingsCatalog.dynamicLayout }
    /// ``SettingsCatalog/storageIndicator``.
    public static var storageIndicator: StoreKey<Bool> { SettingsCatalog.storageIndicator }
    /// ``SettingsCatalog/loopVideo``.
    public static var loopVideo: StoreKey<Bool> { SettingsCatalog.loopVideo }
    /// ``SettingsCatalog/autoPlayVideo``.
    public static var autoPlayVideo: StoreKey<Bool> { SettingsCatalog.autoPlayVideo }
    /// ``SettingsCatalog/enableHapticFeedback``.
    public static var enableHapticFeedback: StoreKey<Bool> { SettingsCatalog.enableHapticFeedback }
}

extension StoreKey where Value == Int {
    /// ``SettingsCatalog/tilesPerRow``.
    public static var tilesPerRow: StoreKey<Int> { SettingsCatalog.tilesPerRow }
    /// ``SettingsCatalog/groupAssetsBy``.
    public static var groupAssetsBy: StoreKey<Int> { SettingsCatalog.groupAssetsBy }
    /// ``SettingsCatalog/backupTriggerDelay``.
    public static var backupTriggerDelay: StoreKey<Int> { SettingsCatalog.backupTriggerDelay }
}

extension StoreKey where Value == String {
    /// ``SettingsCatalog/primaryColor``.
    public static var primaryColor: StoreKey<String> { SettingsCatalog.primaryColor }
}

extension StoreKey where Value == ThemeMode {
    /// ``SettingsCatalog/themeMode``.
    public static var themeMode: StoreKey<ThemeMode> { SettingsCatalog.themeMode }
}
