//! A ProGuard/R8 map as Perfetto's `DeobfuscationMapping` packet holds it: classes with their
//! fields and methods, obfuscated name to original.

/// One member (field or method) of an obfuscated class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObfuscatedMember {
    /// The obfuscated name.
    pub obfuscated: String,
    /// The original name: relative to the class, or `Class.method` for a method inlined from
    /// another class.
    pub deobfuscated: String,
    /// The obfuscated line range (methods with line information).
    pub obfuscated_lines: Option<(u32, u32)>,
    /// The source line range it maps to.
    pub source_lines: Option<(u32, u32)>,
}

/// One class of a map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObfuscatedClass {
    /// The obfuscated name.
    pub obfuscated: String,
    /// The original name.
    pub deobfuscated: String,
    /// Fields.
    pub fields: Vec<ObfuscatedMember>,
    /// Methods, one per line of the map (inline chains and line ranges kept).
    pub methods: Vec<ObfuscatedMember>,
}

/// A whole map for one package.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeobfuscationTable {
    /// The Android package it is for ("" when none was given).
    pub package: String,
    /// Its classes, in the map's order.
    pub classes: Vec<ObfuscatedClass>,
}
