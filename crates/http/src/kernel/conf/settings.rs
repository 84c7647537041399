//! The `settings!` macro: one declaration gives a scope's unset-able struct, its resolved
//! twin, the merge from the enclosing scope and the defaults.

/// Declares a pair of settings structs:
///
/// ```ignore
/// settings! {
///     /// What this module keeps per location.
///     pub struct CoreLocationConf => CoreLocation (env) {
///         /// `client_max_body_size`
///         client_max_body_size: u64 = 1024 * 1024,
///     }
/// }
/// ```
///
/// `CoreLocationConf` has every field as `Option` (unset until a directive sets it);
/// `merge_from(&mut self, parent)` fills unset fields from the enclosing scope, as nginx's
/// merge functions do; `resolve(&self, env)` applies the defaults and returns
/// `CoreLocation`, which has no `Option` left. Defaults are written here and nowhere else;
/// a default expression may use the name given in parentheses (a
/// [`crate::kernel::conf::MergeEnv`]).
#[macro_export]
macro_rules! settings {
    (
        $(#[$meta:meta])*
        pub struct $conf:ident => $resolved:ident ($env:ident) {
            $(
                $(#[$field_meta:meta])*
                $field:ident : $type:ty = $default:expr
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default)]
        pub struct $conf {
            $(
                $(#[$field_meta])*
                pub $field: Option<$type>,
            )*
        }

        $(#[$meta])*
        #[derive(Clone, Debug)]
        pub struct $resolved {
            $(
                $(#[$field_meta])*
                pub $field: $type,
            )*
        }

        impl $conf {
            /// Fills every unset field from the enclosing scope's settings.
            pub(crate) fn merge_from(&mut self, parent: &$conf) {
                $(
                    if self.$field.is_none() {
                        self.$field = parent.$field.clone();
                    }
                )*
            }

            /// The settings with defaults applied to whatever is still unset.
            #[allow(unused_variables)]
            pub fn resolve(&self, $env: &$crate::kernel::conf::MergeEnv) -> $resolved {
                $resolved {
                    $(
                        $field: match &self.$field {
                            Some(value) => value.clone(),
                            None => $default,
                        },
                    )*
                }
            }
        }
    };
}

/// Declares a directive's setter that fills one unset field of a scope, or fails with
/// nginx's `"NAME" directive is duplicate`:
///
/// ```ignore
/// set_once!(set_sendfile, LocationScope, static_files.sendfile, flag);
/// ```
///
/// `$parse(directive, context)` gives the value.
#[macro_export]
macro_rules! set_once {
    ($name:ident, $scope:ty, $($field:ident).+, $parse:expr) => {
        fn $name(
            scope: &mut $scope,
            directive: &::conf::Directive,
            context: &mut $crate::kernel::conf::LoadContext<'_>,
        ) -> Result<(), ::conf::ConfError> {
            if scope.$($field).+.is_some() {
                return Err(context.duplicate(directive));
            }
            scope.$($field).+ = Some($parse(directive, context)?);
            Ok(())
        }
    };
}
