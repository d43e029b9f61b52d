package org.fluss.py.flink.catalog;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.table.catalog.Catalog;
import org.apache.flink.table.factories.CatalogFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.api.ValidationException;
import org.fluss.py.flink.FlussOptions;
import org.fluss.py.flink.client.ConnectionConfig;

import java.util.Set;

/** {@code CREATE CATALOG c WITH ('type'='fluss', 'bootstrap.servers'='host:port', 'default-database'='fluss')}. */
public class FlussCatalogFactory implements CatalogFactory {
    @Override
    public String factoryIdentifier() {
        return FlussOptions.IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(FlussOptions.BOOTSTRAP_SERVERS);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(FlussOptions.DEFAULT_DATABASE, FlussOptions.CLIENT_CONNECT_TIMEOUT,
                FlussOptions.CLIENT_SECURITY_PROTOCOL, FlussOptions.CLIENT_SECURITY_SASL_MECHANISM,
                FlussOptions.CLIENT_SECURITY_SASL_USERNAME, FlussOptions.CLIENT_SECURITY_SASL_PASSWORD,
                FlussOptions.CLIENT_SECURITY_SASL_JAAS_CONFIG,
                FlussOptions.CLIENT_SECURITY_SSL_ENABLED, FlussOptions.CLIENT_SECURITY_SSL_TRUSTSTORE_PATH,
                FlussOptions.CLIENT_SECURITY_SSL_CERTIFICATE_PATH, FlussOptions.CLIENT_SECURITY_SSL_KEY_PATH);
    }

    @Override
    public Catalog createCatalog(Context context) {
        FactoryUtil.CatalogFactoryHelper helper = FactoryUtil.createCatalogFactoryHelper(this, context);
        helper.validateExcept("client.");
        ConnectionConfig connection;
        try {
            connection = ConnectionConfig.from(helper.getOptions().get(FlussOptions.BOOTSTRAP_SERVERS),
                    helper.getOptions(), null);
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Catalog '" + context.getName() + "': " + e.getMessage());
        }
        return new FlussCatalog(context.getName(), helper.getOptions().get(FlussOptions.DEFAULT_DATABASE),
                connection, helper.getOptions().get(FlussOptions.CLIENT_CONNECT_TIMEOUT).toMillis());
    }
}
