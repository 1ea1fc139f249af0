"""Rectified Adam (Liu et al. 2019, "On the variance of the adaptive
learning rate and beyond", Algorithm 2) as a Keras optimizer."""

import keras
from keras import ops

from keras_capsules.private_apis import variable_index


@keras.saving.register_keras_serializable(package="keras_capsules")
class RAdam(keras.optimizers.Optimizer):
    """Adam whose adaptive step is switched on only once the variance of
    the adaptive learning rate is tractable, and then rectified.

    ```none
    paper          code
    beta_1, 2      beta_1, beta_2
    m_t, v_t       momentum, velocity
    rho_inf        2 / (1 - beta_2) - 1
    rho_t          rho_inf - 2 t beta_2^t / (1 - beta_2^t)
    r_t            sqrt((rho_t - 4)(rho_t - 2) rho_inf
                        / ((rho_inf - 4)(rho_inf - 2) rho_t))
    ```

    At step t: `m_t = beta_1 m + (1 - beta_1) g`, `v_t = beta_2 v +
    (1 - beta_2) g^2`, `m_hat = m_t / (1 - beta_1^t)`; if `rho_t > 4` the
    update is `lr r_t m_hat sqrt(1 - beta_2^t) / (sqrt(v_t) + epsilon)`,
    else the un-adapted momentum step `lr m_hat`.

    `beta_1` may be a float or a schedule (a callable of the iteration,
    such as `OneCycle`), as in the one-cycle policy Heinsen (2019) trains
    with; the bias correction then uses the current `beta_1`, as the
    reference implementations of that policy do.

    Args:
        learning_rate: float or `LearningRateSchedule`. Defaults to 1e-3.
        beta_1: float or schedule of the first-moment decay. Defaults to
            0.9.
        beta_2: float, second-moment decay. Defaults to 0.999.
        epsilon: float added to `sqrt(v_t)`. Defaults to 1e-8.
        **kwargs: base optimizer arguments (`weight_decay`, `clipnorm`,
            `global_clipnorm`, `name`, ...).

    Examples:

        >>> variable = keras.Variable([1.0, 2.0])
        >>> optimizer = RAdam(learning_rate=0.1)
        >>> _ = optimizer.apply_gradients([(ops.convert_to_tensor([1.0, 1.0]),
        ...                                 variable)])
        >>> ops.convert_to_numpy(variable)  # first steps: SGD with momentum
        array([0.9, 1.9], dtype=float32)
    """

    def __init__(
        self,
        learning_rate=0.001,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-8,
        name="radam",
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )

    def _current_beta_1(self):
        if callable(self.beta_1):
            return self.beta_1(self.iterations)
        return self.beta_1

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype)
        gradient = ops.cast(gradient, dtype)
        step = ops.cast(self.iterations + 1, dtype)
        beta_1 = ops.cast(self._current_beta_1(), dtype)
        beta_2 = ops.cast(self.beta_2, dtype)
        beta_2_power = ops.power(beta_2, step)
        index = variable_index(self, variable)
        momentum, velocity = self._momentums[index], self._velocities[index]
        self.assign_add(momentum, (gradient - momentum) * (1 - beta_1))
        self.assign_add(
            velocity, (ops.square(gradient) - velocity) * (1 - beta_2)
        )
        momentum_hat = momentum / (1 - ops.power(beta_1, step))
        rho_inf = 2 / (1 - beta_2) - 1
        rho = rho_inf - 2 * step * beta_2_power / (1 - beta_2_power)
        tractable = rho > 4
        # Keeps the square root's argument positive where rho <= 4 (that
        # branch is not taken, but its gradient-free value must be finite).
        safe_rho = ops.where(tractable, rho, 5.0)
        rectifier = ops.sqrt(
            (safe_rho - 4)
            * (safe_rho - 2)
            * rho_inf
            / ((rho_inf - 4) * (rho_inf - 2) * safe_rho)
        )
        adaptive = ops.sqrt(1 - beta_2_power) / (
            ops.sqrt(velocity) + self.epsilon
        )
        scale = ops.where(tractable, rectifier * adaptive, 1.0)
        self.assign_sub(variable, lr * scale * momentum_hat)

    def get_config(self):
        config = super().get_config()
        beta_1 = self.beta_1
        if callable(beta_1):
            beta_1 = keras.saving.serialize_keras_object(beta_1)
        config.update(
            {
                "beta_1": beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
            }
        )
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        if isinstance(config.get("beta_1"), dict):
            config["beta_1"] = keras.saving.deserialize_keras_object(
                config["beta_1"], custom_objects=custom_objects
            )
        return super().from_config(config, custom_objects=custom_objects)
